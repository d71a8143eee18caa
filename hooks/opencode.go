package hooks

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// OpenCode is OpenCode's plugin hook tool.execute.before, asked by the
// plugin OpenCodePlugin (printed by `gateway hook opencode --plugin`)
// over HTTP, or by anything that pipes the same event into `gateway hook
// opencode`. The event is {hook_event_name: "tool.execute.before", tool,
// sessionID, callID, directory, args}; the answer {"decision": "allow" |
// "deny", "reason"}. The plugin lets the call run only on allow and throws
// (which blocks it; the model reads the reason) on anything else.
//
//	bash                   code:exec     args.command, run in workdir
//	read                   fs:read       args.filePath
//	glob                   fs:read       the pattern as written, under path (else the directory)
//	grep, list             fs:read       path, else the directory
//	edit, write, patch     fs:write      args.filePath
//	webfetch               network:http  the host of url
//	MCP tools, any other   [hooks.opencode.tools], else unknown_tool
//
// The hook fires before OpenCode's own permission step and does not skip
// it: docs/agents.md pairs the plugin with "permission": allow, so the
// gateway is the one gate. What would be ask is a deny.
var OpenCode = Adapter{
	Name: "opencode", Label: "OpenCode", Section: "hooks.opencode",
	Decode: decodeOpenCode, Map: mapOpenCode, Answer: answerOpenCode,
}

// OpenCodeBefore is the OpenCode plugin hook the adapter answers.
const OpenCodeBefore = "tool.execute.before"

// OpenCodePlugin is the plugin file users save and name in opencode.json.
//
//go:embed opencode_plugin.js
var OpenCodePlugin []byte

type openCodeEvent struct {
	HookEventName string `json:"hook_event_name"`
	Tool          string `json:"tool"`
	SessionID     string `json:"sessionID"`
	CallID        string `json:"callID"`
	Directory     string `json:"directory"`
	Args          any    `json:"args"`
}

func decodeOpenCode(raw []byte) (Event, error) {
	var oe openCodeEvent
	if len(raw) > MaxEventBytes {
		return Event{}, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(raw, &oe); err != nil {
		return Event{}, fmt.Errorf("%w: OpenCode hook event: %v", ErrBadEvent, err)
	}
	ev := Event{SessionID: oe.SessionID, Cwd: oe.Directory, HookEventName: oe.HookEventName, ToolName: oe.Tool, ToolUseID: oe.CallID}
	if oe.HookEventName != OpenCodeBefore {
		return ev, fmt.Errorf("%w: hook_event_name is %q; only tool.execute.before is supported", ErrBadEvent, oe.HookEventName)
	}
	in, err := cursorInput(oe.Args)
	if err != nil {
		return ev, err
	}
	ev.ToolInput = in
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool", ErrBadEvent)
	}
	return ev, nil
}

var openCodeTools = map[string]func(*Call, Event) error{
	"bash":  builtin["Bash"],
	"read":  fileTool("fs:read", "filePath", "file_path", "path"),
	"edit":  fileTool("fs:write", "filePath", "file_path", "path"),
	"write": fileTool("fs:write", "filePath", "file_path", "path"),
	"patch": fileTool("fs:write", "filePath", "file_path", "path"),
	"glob":  func(c *Call, ev Event) error { return globTool(c, ev, "pattern", "path") },
	"grep":  func(c *Call, ev Event) error { return dirTool(c, ev, "path") },
	"list":  func(c *Call, ev Event) error { return dirTool(c, ev, "path") },
	"webfetch": func(c *Call, ev Event) error {
		raw, err := required(ev, "url")
		if err != nil {
			return err
		}
		if c.Target = hostOf(raw); c.Target == "" {
			return fmt.Errorf("%w: webfetch: no host in args.url", ErrBadEvent)
		}
		c.Capability, c.Intent, c.Args = "network:http", "webfetch "+strip(raw), webArgs(ev.ToolInput)
		return nil
	},
}

func mapOpenCode(ev Event, tools map[string]string) ([]Call, error) {
	if ev.ToolName == "bash" {
		ev = inDir(ev, "workdir")
	}
	cs, err := one(ev, tools, openCodeTools, "hooks.opencode.tools")
	if err != nil {
		return nil, err
	}
	return calls(ev, "OpenCode", "opencode", cs), nil
}

type openCodeOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

func answerOpenCode(_ Event, v Verdict) Reply {
	v = failClosed(v, "OpenCode")
	return Reply{Body: openCodeOutput(v)}
}
