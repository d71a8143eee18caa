package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// EventName is the only hook event this package answers.
const EventName = "PreToolUse"

// Executor is the executor name of every request the hook makes, so the
// card, the vaglio log and rules can tell Claude Code's calls apart.
const Executor = "claude-code"

// ClaudeCode is Claude Code's PreToolUse hook as an Adapter, so the
// command `gateway hook claude-code`, the endpoint POST
// /v1/hooks/claude-code and `gateway mcp`'s approval_prompt take the same
// path as every other agent's hook. Its answer is Output (allow, deny or
// ask: Claude Code's own prompt).
//
// Claude Code's mapping of tools to capabilities and targets:
//
//	Bash                              code:exec     the command
//	Write, Edit, MultiEdit            fs:write      tool_input.file_path
//	NotebookEdit                      fs:write      tool_input.notebook_path
//	Read                              fs:read       tool_input.file_path
//	Glob                              fs:read       the pattern as written, under path (else cwd)
//	Grep                              fs:read       tool_input.path, else cwd
//	WebFetch                          network:http  the host of tool_input.url
//	any other tool, mcp__server__tool [hooks.claude_code.tools], else unknown_tool
//
// Relative paths are resolved against the event's cwd; every adapter
// passes the whole tool input to the guard and asks a person when two
// path fields disagree (input.go). WebSearch has no
// built-in mapping on purpose: the search runs at the model provider, so
// there is no host the agent chose for network:http to key a grant on; map
// it in the config (to llm:online, say) to route it through the gateway.
//
// An exact entry in [hooks.claude_code.tools] overrides the built-in
// mapping of that tool; an entry with a glob ("mcp__gmail__*") applies
// only to tools that have no built-in mapping and no exact entry.
var ClaudeCode = Adapter{
	Name: "claude-code", Label: "Claude Code", Section: "hooks.claude_code",
	Decode: func(raw []byte) (Event, error) { return Decode(bytes.NewReader(raw)) },
	Map: func(ev Event, tools map[string]string) ([]Call, error) {
		c, err := Map(ev, tools)
		if err != nil {
			return nil, err
		}
		return []Call{c}, nil
	},
	Answer:        func(_ Event, v Verdict) Reply { return Reply{Body: Answer(v.Decision, v.Reason)} },
	ConflictIs409: true,
}

// Decode reads one event of at most MaxEventBytes.
func Decode(r io.Reader) (Event, error) {
	var ev Event
	b, err := io.ReadAll(io.LimitReader(r, MaxEventBytes+1))
	if err != nil {
		return ev, fmt.Errorf("%w: read: %v", ErrBadEvent, err)
	}
	if len(b) > MaxEventBytes {
		return ev, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		return ev, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if ev.HookEventName != "" && ev.HookEventName != EventName {
		return ev, fmt.Errorf("%w: hook_event_name is %q; only %s is supported", ErrBadEvent, ev.HookEventName, EventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	return ev, nil
}

// Map returns the call to ask the gateway about. tools is
// [hooks.claude_code.tools]. A tool with no mapping gives an
// *UnknownToolError; an input without the field its mapping needs gives an
// error wrapping ErrBadEvent.
func Map(ev Event, tools map[string]string) (Call, error) {
	c, err := mapTool(ev, tools, builtin, "hooks.claude_code.tools")
	if err != nil {
		return Call{}, err
	}
	c.Executor = Executor
	c.Summary = summary("Claude Code", ev)
	c.SessionID = ev.SessionID
	return c, nil
}

// builtin maps the tools SPEC §9 names.
var builtin = map[string]func(*Call, Event) error{
	"Bash": func(c *Call, ev Event) error {
		cmd, err := required(ev, "command")
		if err != nil {
			return err
		}
		c.Capability, c.Target = "code:exec", cmd
		c.Intent = str(ev.ToolInput, "description")
		c.Args = inputArgs(ev.ToolInput)
		return nil
	},
	"Write":        fileTool("fs:write", "file_path"),
	"Edit":         fileTool("fs:write", "file_path"),
	"MultiEdit":    fileTool("fs:write", "file_path"),
	"NotebookEdit": fileTool("fs:write", "notebook_path"),
	"Read":         fileTool("fs:read", "file_path"),
	"Glob": func(c *Call, ev Event) error {
		return globTool(c, ev, "pattern", "path")
	},
	"Grep": func(c *Call, ev Event) error {
		// The pattern is a regular expression, not a path: searching for
		// "\.ssh" reads nothing under .ssh. What is read is the tree
		// under path (its glob in args).
		return dirTool(c, ev, "path")
	},
	"WebFetch": func(c *Call, ev Event) error {
		raw, err := required(ev, "url")
		if err != nil {
			return err
		}
		host := hostOf(raw)
		if host == "" {
			return fmt.Errorf("%w: WebFetch: no host in tool_input.url", ErrBadEvent)
		}
		c.Capability, c.Target = "network:http", host
		c.Intent = "WebFetch " + strip(raw)
		c.Args = webArgs(ev.ToolInput)
		return nil
	},
}
