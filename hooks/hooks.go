// Package hooks turns a coding agent's hook event into the approval
// requests the gateway is asked about, and the gateway's answer into the
// JSON the agent reads back: one Adapter per agent, Claude Code's in
// claudecode.go (SPEC §9), Codex's, Gemini CLI's, Cursor's, Copilot CLI's,
// Qwen Code's and OpenCode's in theirs; the types they share (Event,
// Call, the decisions) here, and how a tool call is mapped in mapping.go.
// It does no I/O: the `gateway hook NAME` commands and the POST
// /v1/hooks/NAME endpoints do the asking and use this package on either
// side of it.
package hooks

import (
	"errors"
	"fmt"
)

// MaxEventBytes bounds a PreToolUse event. It is far above the API's
// 64 KiB body limit because a Write event carries the whole file it
// writes; only a few small fields of it are kept.
const MaxEventBytes = 8 << 20

// The permission decisions Claude Code understands.
const (
	Allow = "allow" // run the tool without asking
	Deny  = "deny"  // do not run it; the reason is shown to Claude
	Ask   = "ask"   // show the normal local permission prompt
)

// Event is a Claude Code PreToolUse hook input (the JSON on the hook's
// stdin, or the body of an http hook). Unknown fields are ignored: Claude
// Code adds fields over time.
type Event struct {
	SessionID      string         `json:"session_id"`
	TranscriptPath string         `json:"transcript_path,omitempty"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode,omitempty"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id"`
}

// ErrBadEvent is wrapped by every error about the event itself: not JSON,
// too big, not a PreToolUse event, a tool input without the field its
// mapping needs.
var ErrBadEvent = errors.New("bad PreToolUse event")

// UnknownToolError says a tool has neither a built-in mapping nor an entry
// in its agent's tools map.
type UnknownToolError struct {
	Tool    string
	Section string // the config table to map it in; "" = hooks.claude_code.tools
}

// Error names the tool and where to map it.
func (e *UnknownToolError) Error() string {
	sec := e.Section
	if sec == "" {
		sec = "hooks.claude_code.tools"
	}
	return fmt.Sprintf("tool %s has no capability mapping; add it to [%s]", e.Tool, sec)
}

// Call is the approval request an event becomes: the fields of a POST
// /v1/requests body that the hook fills.
type Call struct {
	CallID     string // the tool_use_id: asking twice about one tool call finds the same request
	SessionID  string // the agent's session id, for Allow this session
	Capability string
	Target     string
	Intent     string
	Executor   string
	Summary    string
	Args       map[string]any // the fields the guard should see (values never stored)
	// Ask, when set, says why the call needs a person whatever rules and
	// grants say (policy.Input.Ask): its input names two different paths.
	Ask string
	// Home is the agent's home directory, when the event came through
	// `gateway hook` (Local.Apply): it replaces [[agents]] home.
	Home string
}
