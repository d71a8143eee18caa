package hooks

import (
	"fmt"
	"strings"
)

// Gemini is Gemini CLI's BeforeTool command hook (docs/hooks/reference.md
// in google-gemini/gemini-cli). The event is {session_id, transcript_path,
// cwd, hook_event_name: "BeforeTool", timestamp, tool_name, tool_input};
// the answer is {"decision": "allow" | "deny" | "ask", "reason": …} on
// stdout with exit 0. A deny reaches the model as the tool's error ("Tool
// execution blocked: …"); ask forces Gemini CLI's own confirmation.
//
//	run_shell_command                    code:exec     tool_input.command (description is the intent), run in dir_path
//	                                                   (0.61; earlier: directory): outside the project, "cd DIR && command"
//	write_file, replace                  fs:write      tool_input.file_path (older versions: absolute_path)
//	read_file                            fs:read       tool_input.file_path (older versions: absolute_path)
//	read_many_files                      fs:read       each of tool_input.include / paths, as written (a glob stays one)
//	glob                                 fs:read       the pattern as written, under path (else cwd)
//	search_file_content, grep_search     fs:read       path / dir_path, else cwd
//	list_directory                       fs:read       dir_path / path
//	web_fetch                            network:http  the host of url, and of every URL in prompt (read as Gemini CLI does)
//	mcp_server_tool, anything else       [hooks.gemini.tools], else unknown_tool
var Gemini = Adapter{
	Name: "gemini", Label: "Gemini CLI", Section: "hooks.gemini",
	Decode: decodeGemini, Map: mapGemini, Answer: answerGemini, AskField: "decision",
}

// GeminiBeforeTool is the Gemini CLI hook event the adapter answers.
const GeminiBeforeTool = "BeforeTool"

func decodeGemini(raw []byte) (Event, error) {
	ev, err := decodeEvent(raw, "Gemini CLI hook event")
	if err != nil {
		return ev, err
	}
	if ev.HookEventName != GeminiBeforeTool {
		return ev, fmt.Errorf("%w: hook_event_name is %q; only BeforeTool is supported", ErrBadEvent, ev.HookEventName)
	}
	if ev.ToolName == "" {
		return ev, fmt.Errorf("%w: no tool_name", ErrBadEvent)
	}
	return ev, nil
}

var geminiTools = map[string]func(*Call, Event) error{
	"run_shell_command": builtin["Bash"],
	"write_file":        fileTool("fs:write", "file_path", "absolute_path", "path"),
	"replace":           fileTool("fs:write", "file_path", "absolute_path", "path"),
	"read_file":         fileTool("fs:read", "file_path", "absolute_path", "path"),
	"glob": func(c *Call, ev Event) error {
		return globTool(c, ev, "pattern", "path", "dir_path")
	},
	"search_file_content": func(c *Call, ev Event) error {
		return dirTool(c, ev, "path", "dir_path")
	},
	"list_directory": func(c *Call, ev Event) error {
		return dirTool(c, ev, "dir_path", "path")
	},
}

func init() { geminiTools["grep_search"] = geminiTools["search_file_content"] }

func mapGemini(ev Event, tools map[string]string) ([]Call, error) {
	projectDir := ev.Cwd
	var dirAsk string
	if ev.ToolName == "run_shell_command" {
		ev, dirAsk = geminiShellDir(ev) // where the command runs: paths resolve there, the card names it
	}
	var cs []Call
	var err error
	switch {
	case tools[ev.ToolName] != "":
		cs, err = one(ev, tools, geminiTools, "hooks.gemini.tools")
	case ev.ToolName == "read_many_files":
		cs, err = manyFiles(ev)
	case ev.ToolName == "web_fetch":
		cs, err = webFetch(ev)
	default:
		cs, err = one(ev, tools, geminiTools, "hooks.gemini.tools")
	}
	if err != nil {
		return nil, err
	}
	cs = calls(ev, "Gemini CLI", "gemini-cli", cs)
	if ev.ToolName == "run_shell_command" && ev.Cwd != projectDir {
		// The command runs elsewhere than the project: the target says
		// so, as the shell would read it, so that a rule or grant on the
		// bare command does not cover it there.
		for i := range cs {
			if cs[i].Capability == "code:exec" {
				cs[i].Target = "cd " + shellQuote(ev.Cwd) + " && " + cs[i].Target
				cs[i].Ask = dirAsk
			}
		}
	}
	return cs, nil
}

// geminiShellDir is ev with its working directory moved to where Gemini
// CLI's shell tool runs the command: dir_path (0.61 and later), else
// directory (earlier versions), resolved against the project. When both
// are given and differ, which one the installed version reads is not
// known here: ask says so, and a person decides.
func geminiShellDir(ev Event) (_ Event, ask string) {
	dirPath, _ := ev.ToolInput["dir_path"].(string)
	directory, _ := ev.ToolInput["directory"].(string)
	if strings.TrimSpace(dirPath) != "" && strings.TrimSpace(directory) != "" && resolve(ev.Cwd, dirPath) != resolve(ev.Cwd, directory) {
		ask = "the tool input names two directories (dir_path=" + resolve(ev.Cwd, dirPath) + ", directory=" +
			resolve(ev.Cwd, directory) + "); the command may run in either, so a person decides"
	}
	if strings.TrimSpace(dirPath) != "" {
		return inDir(ev, "dir_path"), ask
	}
	return inDir(ev, "directory"), ask
}

// manyFiles is one fs:read per entry of read_many_files, each as written
// (a glob stays a glob) resolved against the cwd.
func manyFiles(ev Event) ([]Call, error) {
	var pats []string
	for _, f := range []string{"include", "paths"} {
		list, _ := ev.ToolInput[f].([]any)
		for _, x := range list {
			if s, _ := x.(string); strings.TrimSpace(s) != "" {
				pats = append(pats, s)
			}
		}
	}
	if len(pats) == 0 {
		return nil, fmt.Errorf("%w: read_many_files: no include or paths", ErrBadEvent)
	}
	args := inputArgs(ev.ToolInput)
	return each("fs:read", pats, ev.Cwd, func(string) map[string]any { return args }), nil
}

// webFetch is one network:http per host web_fetch would fetch: the host
// of url, and of every URL Gemini CLI reads in prompt (promptURLs). A URL
// the gateway cannot read is an error, never skipped: the call fails
// closed rather than fetch a host nobody was asked about.
func webFetch(ev Event) ([]Call, error) {
	raws, err := promptURLs(str(ev.ToolInput, "prompt"))
	if err != nil {
		return nil, fmt.Errorf("%w: web_fetch: %v", ErrBadEvent, err)
	}
	if u := str(ev.ToolInput, "url"); u != "" {
		raws = append([]string{u}, raws...)
	}
	seen := map[string]bool{}
	var cs []Call
	ask := func(h, raw string) {
		if !seen[h] {
			seen[h] = true
			cs = append(cs, Call{Capability: "network:http", Target: h, Intent: "web_fetch " + strip(raw),
				Args: webArgs(ev.ToolInput)})
		}
	}
	for _, raw := range raws {
		h := hostOf(raw)
		if h == "" {
			return nil, fmt.Errorf("%w: web_fetch: %q names no host the gateway can read", ErrBadEvent, strip(raw))
		}
		ask(h, raw)
		if hostOnly(raw) == "github.com" && strings.Contains(raw, "/blob/") {
			// Gemini CLI fetches a file on github.com from its raw host.
			ask("raw.githubusercontent.com:443", raw)
		}
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%w: web_fetch: no URL in url or prompt", ErrBadEvent)
	}
	return cs, nil
}

type geminiOutput struct {
	Decision      string `json:"decision"`
	Reason        string `json:"reason,omitempty"`
	SystemMessage string `json:"systemMessage,omitempty"`
}

func answerGemini(_ Event, v Verdict) Reply {
	switch v.Decision {
	case Allow:
		return Reply{Body: geminiOutput{Decision: Allow}}
	case Deny:
		return Reply{Body: geminiOutput{Decision: Deny, Reason: v.Reason}}
	}
	return Reply{Body: geminiOutput{Decision: Ask, Reason: v.Reason, SystemMessage: v.Reason}}
}
