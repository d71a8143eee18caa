package hooks

import (
	"fmt"
)

// Qwen is Qwen Code's Claude-style command hooks PreToolUse and
// PermissionRequest ($HOME/.qwen/settings.json "hooks"). Both arrive as
// {session_id, transcript_path, cwd, hook_event_name, timestamp,
// permission_mode, prompt_id, tool_name, tool_input} (PreToolUse also with
// tool_use_id and tool_call_id). PermissionRequest fires where Qwen would
// prompt (the interactive UI and the stream-json SDK mode, never under
// -p), before the call; PreToolUse fires after Qwen's own approval, right
// before the tool runs, in every mode. So one call may fire both, and the
// PreToolUse is answered from the PermissionRequest's request (Pair).
//
//	run_shell_command                      code:exec     command, run in directory
//	read_file                              fs:read       file_path
//	read_many_files                        fs:read       each of paths / include, as written
//	glob                                   fs:read       the pattern as written, under path (else cwd)
//	grep_search, list_directory            fs:read       path, else cwd
//	write_file, edit, notebook_edit        fs:write      file_path / notebook_path
//	web_fetch                              network:http  the host of url (or of every URL in prompt)
//	MCP tools, any other                   [hooks.qwen.tools], else unknown_tool
//
// Qwen Code lets a tool run when its hook exits 1 or is killed by its
// timeout: the adapter answers only allow or deny (what would be ask is a
// deny), always with exit 0, and `gateway hook qwen` answers by itself
// well before the 600 s timeout docs/agents.md sets.
var Qwen = Adapter{
	Name: "qwen", Label: "Qwen Code", Section: "hooks.qwen",
	Decode: decodeQwen, Map: mapQwen, Answer: answerQwen,
	Pair: func(ev Event) PairRole {
		if ev.HookEventName == QwenPermissionRequest {
			return PairLead
		}
		return PairFollow
	},
}

// The Qwen Code hook events the adapter answers.
const (
	QwenPreToolUse        = "PreToolUse"
	QwenPermissionRequest = "PermissionRequest"
)

func decodeQwen(raw []byte) (Event, error) {
	ev, err := decodeEvent(raw, "Qwen Code hook event")
	if err != nil {
		return ev, err
	}
	switch ev.HookEventName {
	case QwenPreToolUse, QwenPermissionRequest:
	default:
		return ev, fmt.Errorf("%w: hook_event_name is %q; want PreToolUse or PermissionRequest", ErrBadEvent, ev.HookEventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	if ev.ToolInput == nil {
		ev.ToolInput = map[string]any{}
	}
	return ev, nil
}

var qwenTools = map[string]func(*Call, Event) error{
	"run_shell_command": builtin["Bash"],
	"read_file":         fileTool("fs:read", "file_path", "absolute_path", "path"),
	"write_file":        fileTool("fs:write", "file_path", "absolute_path", "path"),
	"edit":              fileTool("fs:write", "file_path", "absolute_path", "path"),
	"notebook_edit":     fileTool("fs:write", "notebook_path", "file_path"),
	"glob":              geminiTools["glob"],
	"grep_search":       geminiTools["search_file_content"],
	"list_directory":    geminiTools["list_directory"],
}

func mapQwen(ev Event, tools map[string]string) ([]Call, error) {
	if ev.ToolName == "run_shell_command" {
		ev = inDir(ev, "directory")
	}
	var cs []Call
	var err error
	switch {
	case tools[ev.ToolName] != "":
		cs, err = one(ev, tools, qwenTools, "hooks.qwen.tools")
	case ev.ToolName == "read_many_files":
		cs, err = manyFiles(ev)
	case ev.ToolName == "web_fetch":
		cs, err = webFetch(ev)
	default:
		cs, err = one(ev, tools, qwenTools, "hooks.qwen.tools")
	}
	if err != nil {
		return nil, err
	}
	cs = calls(ev, "Qwen Code", "qwen-code", cs)
	if ev.HookEventName == QwenPermissionRequest {
		asPermissionRequest(cs, "Qwen Code")
	}
	return cs, nil
}

type qwenOutput struct {
	HookSpecificOutput qwenSpecific `json:"hookSpecificOutput"`
}

type qwenSpecific struct {
	HookEventName            string        `json:"hookEventName"`
	PermissionDecision       string        `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string        `json:"permissionDecisionReason,omitempty"`
	Decision                 *qwenDecision `json:"decision,omitempty"`
}

type qwenDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

// answerQwen: allow or deny, never ask (ask in -p is a deny, and no verdict
// at all would let Qwen's own approval, or yolo, run the tool).
func answerQwen(ev Event, v Verdict) Reply {
	v = failClosed(v, "Qwen Code")
	decision, reason := v.Decision, v.Reason
	if ev.HookEventName == QwenPermissionRequest {
		d := &qwenDecision{Behavior: decision}
		if decision == Deny {
			d.Message = reason
		}
		return Reply{Body: qwenOutput{qwenSpecific{HookEventName: QwenPermissionRequest, Decision: d}}}
	}
	return Reply{Body: qwenOutput{qwenSpecific{HookEventName: QwenPreToolUse, PermissionDecision: decision, PermissionDecisionReason: reason}}}
}
