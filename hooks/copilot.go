package hooks

import (
	"encoding/json"
	"fmt"
)

// Copilot is GitHub Copilot CLI's command hooks preToolUse and
// permissionRequest (`copilot help hooks`; settings.json "hooks", or
// .github/hooks/*.json). preToolUse arrives as {sessionId, timestamp,
// cwd, toolName, toolArgs} and is answered {"permissionDecision":
// "allow" | "deny", "permissionDecisionReason"}; an allow also skips
// Copilot's own permission prompt. permissionRequest, fired when Copilot
// would still prompt (a file write, after preToolUse), arrives as
// {hookName: "permissionRequest", sessionId, timestamp, cwd, toolName,
// toolInput, permissionSuggestions} and is answered with the top-level
// {"behavior": "allow" | "deny", "message"} (Copilot ignores any other
// shape).
//
//	bash                  code:exec  toolArgs.command
//	view                  fs:read    toolArgs.path
//	create, edit          fs:write   toolArgs.path (permissionRequest's edit: toolInput.file_path)
//	grep                  fs:read    each of paths (else cwd)
//	glob                  fs:read    the pattern as written, under each of paths (else cwd)
//	MCP tools, any other  [hooks.copilot.tools], else unknown_tool
//
// Copilot runs the tool when a hook times out: the adapter never answers
// ask, only allow or deny, and `gateway hook copilot` answers (deny, when
// nobody decided or the gateway could not be asked) well before the
// 600 s timeoutSec docs/agents.md sets. One file write fires both events
// with no call id between them; the permissionRequest is answered from
// the preToolUse's request (Pair), never with a second card.
var Copilot = Adapter{
	Name: "copilot", Label: "Copilot CLI", Section: "hooks.copilot",
	Decode: decodeCopilot, Map: mapCopilot, Answer: answerCopilot, Relay: relayCopilot,
	Pair: func(ev Event) PairRole {
		if ev.HookEventName == CopilotPermissionRequest {
			return PairFollow
		}
		return PairLead
	},
}

// The Copilot CLI hook events the adapter answers.
const (
	CopilotPreToolUse        = "preToolUse"
	CopilotPermissionRequest = "permissionRequest"
)

type copilotEvent struct {
	HookName  string `json:"hookName"`
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	ToolName  string `json:"toolName"`
	ToolArgs  any    `json:"toolArgs"`  // preToolUse: an object (or its JSON)
	ToolInput any    `json:"toolInput"` // permissionRequest
}

func decodeCopilot(raw []byte) (Event, error) {
	var ce copilotEvent
	if len(raw) > MaxEventBytes {
		return Event{}, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(raw, &ce); err != nil {
		return Event{}, fmt.Errorf("%w: Copilot CLI hook event: %v", ErrBadEvent, err)
	}
	ev := Event{SessionID: ce.SessionID, Cwd: ce.Cwd, ToolName: ce.ToolName}
	input := ce.ToolArgs
	switch ce.HookName {
	case "", CopilotPreToolUse:
		ev.HookEventName = CopilotPreToolUse
	case CopilotPermissionRequest:
		ev.HookEventName, input = CopilotPermissionRequest, ce.ToolInput
	default:
		return ev, fmt.Errorf("%w: hookName is %q; want preToolUse or permissionRequest", ErrBadEvent, ce.HookName)
	}
	in, err := cursorInput(input)
	if err != nil {
		return ev, err
	}
	ev.ToolInput = in
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no toolName", ErrBadEvent)
	}
	return ev, nil
}

// relayCopilot leaves out what a write carries (create's file_text, the
// permissionRequest's diff): the gateway decides on the path.
func relayCopilot(raw []byte) []byte {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	changed := false
	for _, k := range []string{"toolArgs", "toolInput"} {
		if in, ok := m[k].(map[string]any); ok {
			for f := range in {
				if dataFields[f] {
					in[f], changed = "(not sent)", true
				}
			}
		}
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

var copilotTools = map[string]func(*Call, Event) error{
	"bash":   builtin["Bash"],
	"shell":  builtin["Bash"],
	"view":   fileTool("fs:read", "path", "file_path"),
	"read":   fileTool("fs:read", "path", "file_path"),
	"create": fileTool("fs:write", "path", "file_path"),
	"edit":   fileTool("fs:write", "path", "file_path"),
	"write":  fileTool("fs:write", "path", "file_path"),
}

func mapCopilot(ev Event, tools map[string]string) ([]Call, error) {
	var cs []Call
	var err error
	switch {
	case tools[ev.ToolName] != "":
		cs, err = one(ev, tools, copilotTools, "hooks.copilot.tools")
	case ev.ToolName == "grep" || ev.ToolName == "glob":
		cs, err = searchEach(ev)
	default:
		cs, err = one(ev, tools, copilotTools, "hooks.copilot.tools")
	}
	if err != nil {
		return nil, err
	}
	cs = calls(ev, "Copilot CLI", "copilot-cli", cs)
	if ev.HookEventName == CopilotPermissionRequest {
		asPermissionRequest(cs, "Copilot CLI")
	}
	return cs, nil
}

// searchEach is Copilot's grep and glob: one fs:read per directory in
// paths (a string or a list; else the cwd), the glob's pattern under it.
func searchEach(ev Event) ([]Call, error) {
	var dirs []string
	switch v := ev.ToolInput["paths"].(type) {
	case string:
		dirs = append(dirs, v)
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("%w: %s: paths holds something that is not a string", ErrBadEvent, ev.ToolName)
			}
			dirs = append(dirs, s)
		}
	case nil:
	default:
		return nil, fmt.Errorf("%w: %s: paths is neither a string nor a list", ErrBadEvent, ev.ToolName)
	}
	if len(dirs) == 0 {
		dirs = []string{ev.Cwd}
	}
	args := inputArgs(ev.ToolInput)
	var targets []string
	for _, d := range dirs {
		base := resolve(ev.Cwd, d)
		if ev.ToolName == "glob" {
			base = globTarget(base, str(ev.ToolInput, "pattern"))
		}
		targets = append(targets, base)
	}
	cs := each("fs:read", targets, ev.Cwd, func(string) map[string]any { return args })
	if len(cs) == 0 {
		return nil, fmt.Errorf("%w: %s: no path and no cwd", ErrBadEvent, ev.ToolName)
	}
	return cs, nil
}

type copilotPreToolUse struct {
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

type copilotPermission struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

// answerCopilot: allow or deny, never ask. What would be ask (nobody
// decided in time, the gateway could not be asked) is a deny: Copilot's
// "ask" is a deny in -p mode anyway, and a hook that fails or times out
// lets the tool run.
func answerCopilot(ev Event, v Verdict) Reply {
	v = failClosed(v, "Copilot CLI")
	decision, reason := v.Decision, v.Reason
	if ev.HookEventName == CopilotPermissionRequest {
		if decision == Allow {
			return Reply{Body: copilotPermission{Behavior: Allow}}
		}
		return Reply{Body: copilotPermission{Behavior: Deny, Message: reason}}
	}
	return Reply{Body: copilotPreToolUse{PermissionDecision: decision, PermissionDecisionReason: reason}}
}
