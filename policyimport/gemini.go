package policyimport

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/metnos/gateway/policy"
)

// Gemini reads Gemini CLI's settings files: tools.allowed (calls that
// skip the confirmation), tools.exclude (tools taken away), and lists
// tools.core (the tools the model is offered: an availability list, not
// a permission) and general.defaultApprovalMode; also the same lists of
// the older flat layout (allowedTools, excludeTools, coreTools). And its
// policy files (policies/*.toml beside the user's and the project's
// settings, where "Always allow" is saved): [[rule]] toolName,
// commandPrefix, decision = "allow" | "ask_user" | "deny", priority. The
// highest priority decides: the user's policies are tier 4, the
// project's 3, each plus priority/1000; tools.exclude is 4.4 and
// tools.allowed 4.3, as Gemini CLI ranks them.
var Gemini = Format{
	Name: "gemini", Label: "Gemini CLI",
	Defaults: func(e Env) []string {
		out := []string{filepath.Join(e.Home, ".gemini", "settings.json"), filepath.Join(e.Cwd, ".gemini", "settings.json")}
		for _, dir := range []string{filepath.Join(e.Home, ".gemini"), filepath.Join(e.Cwd, ".gemini")} {
			p, _ := filepath.Glob(filepath.Join(dir, "policies", "*.toml"))
			out = append(out, p...)
		}
		return out
	},
	Parse: func(e Env, path string, data []byte) (Result, error) {
		if strings.HasSuffix(path, ".toml") {
			return geminiPolicy(e, path, data)
		}
		return parseGeminiStyle(e, path, data, ".gemini", geminiSettingsRank)
	},
}

// geminiSettingsRank are the priorities Gemini CLI gives its settings'
// lists among its policies.
var geminiSettingsRank = map[policy.Action]float64{policy.ActionBlock: 4.4, policy.ActionApprove: 4.3}

// geminiTools maps Gemini CLI's (and Qwen Code's) tool names, and the
// class names its settings also accept, to capabilities.
var geminiTools = map[string]string{
	"run_shell_command": toolExec, "ShellTool": toolExec,
	"write_file": toolWrite, "WriteFileTool": toolWrite, "replace": toolWrite, "edit": toolWrite, "EditTool": toolWrite,
	"read_file": toolRead, "ReadFileTool": toolRead, "read_many_files": toolRead, "ReadManyFilesTool": toolRead,
	"glob": toolRead, "GlobTool": toolRead, "search_file_content": toolRead, "grep_search": toolRead, "GrepTool": toolRead,
	"list_directory": toolRead, "LSTool": toolRead,
	"web_fetch": toolFetch, "WebFetchTool": toolFetch,
}

// geminiLists are the tool lists of a Gemini-style settings file and
// what each means; "" marks a list that is not a permission.
var geminiLists = map[string]policy.Action{
	"tools.allowed": policy.ActionApprove, "allowedTools": policy.ActionApprove,
	"tools.exclude": policy.ActionBlock, "excludeTools": policy.ActionBlock,
	"tools.core": "", "coreTools": "",
}

// geminiSettings are agent-wide settings listed because they change how
// much the agent asks.
var geminiSettings = map[string]bool{
	"general.defaultApprovalMode": true, "tools.approvalMode": true, "tools.autoAccept": true, "autoAccept": true,
}

// parseGeminiStyle reads the tool lists of a Gemini CLI or Qwen Code
// settings file; more, when set, reads the keys the format adds (Qwen
// Code's permissions) and reports whether it took the path.
func parseGeminiStyle(e Env, path string, data []byte, marker string, rank map[policy.Action]float64) (Result, error) {
	return parseGeminiStyleWith(e, path, data, marker, rank, nil)
}

func parseGeminiStyleWith(e Env, path string, data []byte, marker string, rank map[policy.Action]float64,
	more func(s *sink, root string, p []string, v any, line int) bool) (Result, error) {
	s := &sink{path: path}
	root := projectRoot(e, path, marker)
	err := walkJSON(data, func(p []string, v any, line int) {
		if more != nil && more(s, root, p, v, line) {
			return
		}
		key := strings.Join(p, ".")
		if geminiSettings[key] {
			s.skip(line, key+" = "+fmt.Sprint(v), "a setting of the agent, not a rule: the gateway decides by its own policy and the agent's level")
			return
		}
		if len(p) < 2 {
			return
		}
		list := strings.Join(p[:len(p)-1], ".")
		action, ok := geminiLists[list]
		if !ok {
			return
		}
		entry, isString := v.(string)
		switch {
		case !isString:
			s.skip(line, key, "not a tool name")
		case action == "":
			s.skip(line, list+": "+entry, "the tools the model is offered, not a permission: the gateway asks about every call it has no rule for")
		default:
			geminiEntry(s, line, entry, action, rank[action], root)
		}
	})
	return s.res, err
}

// geminiEntry turns one "tool" or "run_shell_command(prefix)" of a list.
func geminiEntry(s *sink, line int, entry string, action policy.Action, priority float64, root string) {
	tool, spec, hasSpec, err := splitEntry(entry)
	if err != nil {
		s.skip(line, entry, "%v", err)
		return
	}
	capability, ok := geminiTools[tool]
	switch {
	case !ok:
		s.skip(line, entry, "%s has no built-in capability: map it in the gateway's [hooks.*.tools] and write the rule on that capability", tool)
		return
	case hasSpec && capability != toolExec:
		s.skip(line, entry, "a specifier on %s, which the agent does not read", tool)
		return
	}
	var targets []string
	switch {
	case capability == toolExec && hasSpec:
		targets, err = prefixTargets(spec)
	case capability == toolExec, capability == toolFetch:
		targets = []string{"*"}
	default:
		targets, err = anyPath(root, action)
	}
	s.ranked(line, entry, capability, action, priority, targets, err)
}
