package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Cursor is Cursor's agent hooks (https://cursor.com/docs/agent/hooks):
// beforeShellExecution {command, cwd}, beforeMCPExecution {tool_name,
// tool_input, url | command}, beforeReadFile {file_path, content}, and
// preToolUse {tool_name, tool_input, tool_use_id} where Cursor has it;
// every event also carries conversation_id, generation_id,
// hook_event_name and workspace_roots. The answer is {"permission":
// "allow" | "deny" | "ask", "user_message", "agent_message"} with exit 0;
// beforeReadFile knows only allow and deny, so what would be ask is deny
// there.
//
//	beforeShellExecution, preToolUse Shell     code:exec  the command
//	beforeReadFile, preToolUse Read            fs:read    file_path
//	preToolUse Write, Edit, StrReplace, Delete fs:write   file_path / path / target_file
//	preToolUse Grep, LS                        fs:read    path / target_directory, else the workspace
//	preToolUse Glob                            fs:read    the pattern as written, under that directory
//	beforeMCPExecution, preToolUse MCP:…       [hooks.cursor.tools] by tool name, else unknown_tool
//
// Cursor's agent CLI is not published on npm, so this adapter is tested
// against fixtures built from the payloads its documentation shows.
var Cursor = Adapter{
	Name: "cursor", Label: "Cursor", Section: "hooks.cursor",
	Decode: decodeCursor, Map: mapCursor, Answer: answerCursor, Relay: relayCursor, AskField: "permission",
}

// The Cursor hook events the adapter answers.
const (
	CursorShell   = "beforeShellExecution"
	CursorMCP     = "beforeMCPExecution"
	CursorRead    = "beforeReadFile"
	CursorPreTool = "preToolUse"
)

type cursorEvent struct {
	HookEventName  string   `json:"hook_event_name"`
	ConversationID string   `json:"conversation_id"`
	WorkspaceRoots []string `json:"workspace_roots"`
	Command        string   `json:"command"`
	Cwd            string   `json:"cwd"`
	ToolName       string   `json:"tool_name"`
	ToolInput      any      `json:"tool_input"` // an object, or (beforeMCPExecution) its JSON as a string
	ToolUseID      string   `json:"tool_use_id"`
	FilePath       string   `json:"file_path"`
	URL            string   `json:"url"`
}

// decodeCursor turns each Cursor event into the common shape: the shell
// and read events become the Shell and Read tools. A file's content is
// never kept.
func decodeCursor(raw []byte) (Event, error) {
	ev, err := decodeCursorEvent(raw)
	return ev, cursorBad(ev.HookEventName, err)
}

// cursorBad describes a bad event by the Cursor event at hand ("bad Cursor
// beforeReadFile event: …"), or as "bad Cursor hook event: …" when it is
// none Cursor sends; ErrBadEvent's own words name Claude Code's PreToolUse.
// errors.Is still finds ErrBadEvent, errors.As what err wraps.
func cursorBad(event string, err error) error {
	if err == nil || !errors.Is(err, ErrBadEvent) {
		return err
	}
	what := "Cursor hook event"
	switch event {
	case CursorShell, CursorMCP, CursorRead, CursorPreTool:
		what = "Cursor " + event + " event"
	}
	return &describedError{text: strings.Replace(err.Error(), ErrBadEvent.Error(), "bad "+what, 1), err: err}
}

// describedError is err under other words.
type describedError struct {
	text string
	err  error
}

func (e *describedError) Error() string { return e.text }
func (e *describedError) Unwrap() error { return e.err }

func decodeCursorEvent(raw []byte) (Event, error) {
	var ce cursorEvent
	if len(raw) > MaxEventBytes {
		return Event{}, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(raw, &ce); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	ev := Event{SessionID: ce.ConversationID, HookEventName: ce.HookEventName, Cwd: ce.Cwd, ToolUseID: ce.ToolUseID}
	if ev.Cwd == "" && len(ce.WorkspaceRoots) > 0 {
		ev.Cwd = ce.WorkspaceRoots[0]
	}
	input, err := cursorInput(ce.ToolInput)
	if err != nil {
		return ev, err
	}
	switch ce.HookEventName {
	case CursorShell:
		ev.ToolName, ev.ToolInput = "Shell", map[string]any{"command": ce.Command}
	case CursorRead:
		ev.ToolName, ev.ToolInput = "Read", map[string]any{"file_path": ce.FilePath}
	case CursorMCP, CursorPreTool:
		ev.ToolName, ev.ToolInput = ce.ToolName, input
		if ce.HookEventName == CursorMCP && ce.URL != "" {
			ev.ToolInput["server_url"] = ce.URL
		}
	default:
		return ev, fmt.Errorf("%w: hook_event_name is %q; want beforeShellExecution, beforeMCPExecution, beforeReadFile or preToolUse", ErrBadEvent, ce.HookEventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	return ev, nil
}

func cursorInput(v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return x, nil
	case string:
		if strings.TrimSpace(x) == "" {
			return map[string]any{}, nil
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(x), &m); err != nil {
			return nil, fmt.Errorf("%w: tool_input is a string but not a JSON object: %v", ErrBadEvent, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: tool_input is neither an object nor its JSON", ErrBadEvent)
}

// relayCursor drops a beforeReadFile event's content: the gateway decides
// on the path, and a secret file's bytes have no business on the wire.
func relayCursor(raw []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["content"]; !ok {
		return raw
	}
	delete(m, "content")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

var cursorTools = map[string]func(*Call, Event) error{
	"Shell":      builtin["Bash"],
	"Read":       fileTool("fs:read", "file_path", "path", "target_file"),
	"Write":      fileTool("fs:write", "file_path", "path", "target_file"),
	"Edit":       fileTool("fs:write", "file_path", "path", "target_file"),
	"StrReplace": fileTool("fs:write", "file_path", "path", "target_file"),
	"MultiEdit":  fileTool("fs:write", "file_path", "path", "target_file"),
	"Delete":     fileTool("fs:write", "file_path", "path", "target_file"),
	"Grep":       func(c *Call, ev Event) error { return dirTool(c, ev, "path", "target_directory") },
	"LS":         func(c *Call, ev Event) error { return dirTool(c, ev, "path", "target_directory") },
	"Glob": func(c *Call, ev Event) error {
		field := "pattern"
		if str(ev.ToolInput, field) == "" {
			field = "glob_pattern"
		}
		return globTool(c, ev, field, "path", "target_directory")
	},
}

func mapCursor(ev Event, tools map[string]string) ([]Call, error) {
	table := cursorTools
	if ev.HookEventName == CursorMCP {
		table = nil // an MCP tool is named by its server: only the tools map knows it
	}
	cs, err := one(ev, tools, table, "hooks.cursor.tools")
	if err != nil {
		return nil, cursorBad(ev.HookEventName, err)
	}
	return calls(ev, "Cursor", "cursor", cs), nil
}

type cursorOutput struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

func answerCursor(ev Event, v Verdict) Reply {
	switch v.Decision {
	case Allow:
		return Reply{Body: cursorOutput{Permission: Allow, UserMessage: v.Reason}}
	case Deny:
		return Reply{Body: cursorOutput{Permission: Deny, UserMessage: v.Reason, AgentMessage: v.Reason}}
	}
	if ev.HookEventName == CursorRead {
		// beforeReadFile cannot ask: refuse rather than let it through.
		return Reply{Body: cursorOutput{Permission: Deny, UserMessage: v.Reason, AgentMessage: v.Reason}}
	}
	return Reply{Body: cursorOutput{Permission: Ask, UserMessage: v.Reason, AgentMessage: v.Reason}}
}
