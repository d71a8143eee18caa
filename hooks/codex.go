package hooks

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/metnos/gateway/internal/shell"
)

// Codex is OpenAI Codex CLI's command hooks, PreToolUse and
// PermissionRequest (https://developers.openai.com/codex/hooks). Both
// arrive on stdin as {session_id, turn_id, cwd, hook_event_name, model,
// permission_mode, tool_name, tool_input, tool_use_id}.
//
//	Bash, shell, local_shell,             code:exec  the command line: tool_input.command (a string, or an argv
//	shell_command, exec_command                      list, ["bash", "-lc", S] read as S) or exec_command's cmd
//	a shell running an apply_patch heredoc fs:write  every path the patch adds, updates, deletes or moves to
//	(or argv ["apply_patch", PATCH])                 (and code:exec on it all unless bash reads it as only that)
//	apply_patch (Edit, Write)             fs:write   every path of the patch in tool_input.command
//	mcp__server__tool, anything else      [hooks.codex.tools], else unknown_tool
//
// Codex's PreToolUse may only deny ("permissionDecision":"allow" or "ask"
// are refused as unsupported): an allowed call gets an empty answer and
// goes on to Codex's own sandbox and approval rules; when those would ask,
// Codex fires PermissionRequest ({command, description}, no tool call id),
// a request of its own, whose answer may allow or deny. So:
//
//	verdict  PreToolUse                           PermissionRequest
//	allow    {} (go on)                           decision.behavior = allow
//	deny     permissionDecision = deny, reason    decision.behavior = deny, message
//	ask      permissionDecision = deny (blocked:  {} (no verdict: Codex's own
//	         Codex has no prompt to fall back on) approval prompt)
//
// A PreToolUse that nobody approved in time, or that could not reach the
// gateway, is therefore blocked, never let through.
var Codex = Adapter{
	Name: "codex", Label: "Codex", Section: "hooks.codex",
	Decode: decodeCodex, Map: mapCodex, Answer: answerCodex,
}

// The Codex hook events the adapter answers.
const (
	CodexPreToolUse        = "PreToolUse"
	CodexPermissionRequest = "PermissionRequest"
)

func decodeCodex(raw []byte) (Event, error) {
	ev, err := decodeEvent(raw, "Codex hook event")
	if err != nil {
		return ev, err
	}
	switch ev.HookEventName {
	case CodexPreToolUse, CodexPermissionRequest:
	default:
		return ev, fmt.Errorf("%w: hook_event_name is %q; want PreToolUse or PermissionRequest", ErrBadEvent, ev.HookEventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	return ev, nil
}

// codexShells are the names Codex gives its shell tool across versions and
// models: Bash (as PreToolUse names it), shell and local_shell (an argv
// list in command), shell_command (a string in command), exec_command (a
// string in cmd). All are one tool to the gateway: code:exec on the same
// command line, so a rule or grant matches whatever name the call came in.
var codexShells = map[string]bool{"Bash": true, "shell": true, "local_shell": true, "shell_command": true, "exec_command": true}

var codexTools = map[string]func(*Call, Event) error{}

func init() {
	for name := range codexShells {
		codexTools[name] = codexExec
	}
}

// codexExec maps a shell call to code:exec on its command line.
func codexExec(c *Call, ev Event) error {
	cmd, _ := codexCommand(ev.ToolInput)
	if strings.TrimSpace(cmd) == "" {
		return fmt.Errorf("%w: %s: tool_input.command is missing or empty", ErrBadEvent, ev.ToolName)
	}
	c.Capability, c.Target = "code:exec", cmd
	c.Intent = str(ev.ToolInput, "description")
	c.Args = inputArgs(ev.ToolInput)
	return nil
}

// codexCommand is a shell call's command line: command as a string, else
// command as an argv list (["bash", "-lc", S] is S; any other list is its
// words, shell-quoted where needed, so the line means what the list runs),
// else exec_command's cmd. argv is the list, when command is one.
func codexCommand(in map[string]any) (cmd string, argv []string) {
	switch v := in["command"].(type) {
	case string:
		return v, nil
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return "", nil // not an argv: refused as missing
			}
			argv = append(argv, s)
		}
		if len(argv) == 3 && shellNames[path.Base(argv[0])] && (argv[1] == "-c" || argv[1] == "-lc" || argv[1] == "-cl") {
			return argv[2], argv
		}
		words := make([]string, len(argv))
		for i, a := range argv {
			words[i] = shellQuote(a)
		}
		return strings.Join(words, " "), argv
	}
	return str(in, "cmd"), nil
}

var shellNames = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes a word for a POSIX shell, only when it needs it.
func shellQuote(w string) string {
	if shellSafe.MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// codexShellCalls maps a shell call: fs:write per path when it applies a
// patch (argv ["apply_patch", PATCH], or a heredoc, see shellPatchCalls),
// else code:exec on the command line. ev.Cwd is already the call's
// workdir (mapCodex).
func codexShellCalls(ev Event) ([]Call, error) {
	cmd, argv := codexCommand(ev.ToolInput)
	switch {
	case len(argv) == 2 && (argv[0] == "apply_patch" || argv[0] == "applypatch"):
		return patchCallsIn(ev, ev.Cwd, argv[1])
	case isApplyPatch(cmd):
		return shellPatchCalls(ev, cmd)
	}
	var c Call
	if err := codexExec(&c, ev); err != nil {
		return nil, err
	}
	return []Call{c}, nil
}

func mapCodex(ev Event, tools map[string]string) ([]Call, error) {
	if codexShells[ev.ToolName] {
		ev = inDir(ev, "workdir") // where the command runs: paths resolve there, the card names it
	}
	var cs []Call
	var err error
	switch {
	case tools[ev.ToolName] != "":
		cs, err = one(ev, tools, codexTools, "hooks.codex.tools")
	case ev.ToolName == "apply_patch" || ev.ToolName == "Edit" || ev.ToolName == "Write":
		patch := first(ev.ToolInput, []string{"command", "input", "patch"})
		cs, err = patchCalls(ev, patch)
	case codexShells[ev.ToolName]:
		cs, err = codexShellCalls(ev)
	default:
		cs, err = one(ev, tools, codexTools, "hooks.codex.tools")
	}
	if err != nil {
		return nil, err
	}
	cs = calls(ev, "Codex", "codex", cs)
	if ev.HookEventName == CodexPermissionRequest {
		// Codex asks this on top of PreToolUse (to leave its sandbox, or
		// because its approval policy asks), without the tool call's id:
		// it is a request of its own, and the card says why.
		for i := range cs {
			cs[i].Summary = "Codex · permission request: " + ev.ToolName
			if d := str(ev.ToolInput, "description"); d != "" {
				cs[i].Summary += " (" + d + ")"
			}
			if ev.Cwd != "" {
				cs[i].Summary += " in " + ev.Cwd
			}
		}
	}
	return cs, nil
}

// patchCalls is one fs:write per path of an apply_patch patch.
func patchCalls(ev Event, patch string) ([]Call, error) {
	return patchCallsIn(ev, ev.Cwd, patch)
}

func patchCallsIn(ev Event, dir, patch string) ([]Call, error) {
	paths := PatchPaths(patch)
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: %s: a patch that names no file", ErrBadEvent, ev.ToolName)
	}
	for i, p := range paths {
		paths[i] = patchPath(dir, p)
	}
	args := inputArgs(ev.ToolInput)
	cs := each("fs:write", paths, "", func(string) map[string]any { return args })
	for i := range cs {
		cs[i].Intent = "apply_patch " + cs[i].Target
	}
	return cs, nil
}

var applyPatchWord = regexp.MustCompile(`\b(apply_patch|applypatch)\b`)

// isApplyPatch reports whether a shell command runs apply_patch.
func isApplyPatch(cmd string) bool {
	return strings.Contains(cmd, "*** Begin Patch") && applyPatchWord.MatchString(cmd)
}

// shellPatchCalls maps a shell call that runs apply_patch: fs:write on
// each path. Only when bash reads the command as exactly Codex's own form,
// [cd DIR &&] apply_patch <<'EOF' … EOF and nothing else (shell.Single),
// is that all; anything more (a line after the delimiter, a second
// command, a substitution, a line the parser refuses) is also code:exec on
// the whole command, with the patch's paths read from all of it.
func shellPatchCalls(ev Event, cmd string) ([]Call, error) {
	one, ok := shell.Single(cmd, shell.AllowCd|shell.AllowHeredoc)
	if ok && one.HasHeredoc && len(one.Args) == 1 && (one.Args[0] == "apply_patch" || one.Args[0] == "applypatch") {
		dir := ev.Cwd
		if one.Dir != "" {
			dir = resolve(ev.Cwd, one.Dir)
		}
		if cs, err := patchCallsIn(ev, dir, one.Heredoc); err == nil {
			return cs, nil
		}
	}
	cs, err := patchCallsIn(ev, ev.Cwd, cmd)
	if err != nil {
		return nil, err
	}
	return append(cs, Call{Capability: "code:exec", Target: cmd, Args: inputArgs(ev.ToolInput)}), nil
}

// patchHeaders are the lines of Codex's apply_patch grammar that name a
// file it writes (codex-rs/apply-patch, parser.rs).
var patchHeaders = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}

// PatchPaths are the files an apply_patch patch touches, in order: those
// it adds, updates, deletes, and moves to, as Codex reads them. Codex
// trims each line before it matches a header (Rust's str::trim: Unicode
// White_Space, which strings.TrimSpace also trims), so a header indented
// with spaces, a tab or U+3000 is a file it writes; what follows the
// header's own space is the path as written, leading white space
// included. Every line is read so, also where Codex would not take it
// for a header (inside an update's hunk) or where the patch fails later:
// Codex applies a patch hunk by hunk, so what a failing patch wrote before
// it failed stays written. The result is therefore every file Codex may
// write, sometimes one more.
func PatchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSpace(line)
		for _, h := range patchHeaders {
			if rest, ok := strings.CutPrefix(line, h); ok && rest != "" {
				out = append(out, rest)
			}
		}
	}
	return out
}

// patchPath is a patch's path p as Codex resolves it: against dir, the
// call's working directory, unless absolute. "~" is a directory name to
// apply_patch, not the home directory.
func patchPath(dir, p string) string {
	if path.IsAbs(p) || dir == "" {
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

type codexOutput struct {
	HookSpecificOutput *codexSpecific `json:"hookSpecificOutput,omitempty"`
}

type codexSpecific struct {
	HookEventName            string         `json:"hookEventName"`
	PermissionDecision       string         `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string         `json:"permissionDecisionReason,omitempty"`
	Decision                 *codexDecision `json:"decision,omitempty"`
}

type codexDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

func answerCodex(ev Event, v Verdict) Reply {
	if ev.HookEventName == CodexPermissionRequest {
		switch v.Decision {
		case Allow:
			return Reply{Body: codexOutput{&codexSpecific{HookEventName: CodexPermissionRequest, Decision: &codexDecision{Behavior: Allow}}}}
		case Deny:
			return Reply{Body: codexOutput{&codexSpecific{HookEventName: CodexPermissionRequest, Decision: &codexDecision{Behavior: Deny, Message: v.Reason}}}}
		}
		return Reply{Body: codexOutput{}} // no verdict: Codex's own approval prompt
	}
	switch v.Decision {
	case Allow:
		return Reply{Body: codexOutput{}}
	case Deny:
		return Reply{Body: codexOutput{&codexSpecific{HookEventName: CodexPreToolUse, PermissionDecision: Deny, PermissionDecisionReason: v.Reason}}}
	}
	reason := strings.TrimSuffix(v.Reason, "; asking here instead") +
		"; Codex cannot ask at this point, so the call is blocked. Ask the user to approve it and try again."
	return Reply{Body: codexOutput{&codexSpecific{HookEventName: CodexPreToolUse, PermissionDecision: Deny, PermissionDecisionReason: reason}}}
}
