package policyimport

import (
	"fmt"
	"path/filepath"

	"github.com/metnos/gateway/policy"
)

// OpenCode reads the permission block of OpenCode's opencode.json (or
// .jsonc): "permission": ACTION for every tool, {TOOL: ACTION}, or
// {TOOL: {PATTERN: ACTION}}, where ACTION is allow, ask or deny and the
// last matching pattern wins (the project's file is read after the
// user's, and so wins too).
var OpenCode = Format{
	Name: "opencode", Label: "OpenCode", LastWins: true,
	Defaults: func(e Env) []string {
		cfg := e.getenv("XDG_CONFIG_HOME")
		if cfg == "" {
			cfg = filepath.Join(e.Home, ".config")
		}
		var out []string
		for _, dir := range []string{filepath.Join(cfg, "opencode"), e.Cwd, filepath.Join(e.Cwd, ".opencode")} {
			out = append(out, filepath.Join(dir, "opencode.json"), filepath.Join(dir, "opencode.jsonc"))
		}
		if p := e.getenv("OPENCODE_CONFIG"); p != "" {
			out = append(out, p)
		}
		return out
	},
	Parse: parseOpenCode,
}

var openCodeActions = map[string]policy.Action{
	"allow": policy.ActionApprove, "ask": policy.ActionRequireApproval, "deny": policy.ActionBlock,
}

// openCodeTools maps OpenCode's permission keys to capabilities; "*" is
// every tool.
var openCodeTools = map[string]string{
	"bash": toolExec, "edit": toolWrite, "write": toolWrite, "patch": toolWrite, "multiedit": toolWrite,
	"read": toolRead, "glob": toolRead, "grep": toolRead, "list": toolRead, "webfetch": toolFetch, "*": "*",
}

func parseOpenCode(e Env, path string, data []byte) (Result, error) {
	s := &sink{path: path}
	root := openCodeRoot(e, path)
	err := walkJSON(data, func(p []string, v any, line int) {
		if len(p) == 0 || p[0] != "permission" || len(p) > 3 {
			return
		}
		tool, pattern := "*", "*"
		if len(p) >= 2 {
			tool = p[1]
		}
		if len(p) == 3 {
			pattern = p[2]
		}
		entry := fmt.Sprintf("permission.%s", tool)
		if len(p) == 3 {
			entry += fmt.Sprintf("[%q]", pattern)
		}
		word, _ := v.(string)
		entry += " = " + word
		action, ok := openCodeActions[word]
		capability, known := openCodeTools[tool]
		switch {
		case !ok:
			s.skip(line, entry, "%q is none of allow, ask, deny", fmt.Sprint(v))
			return
		case !known:
			s.skip(line, entry, "%s has no built-in capability (external_directory, task, skill, websearch and MCP tools among them): map the tool in [hooks.opencode.tools] and write the rule on that capability", tool)
			return
		}
		var targets []string
		var err error
		switch capability {
		case toolExec, "*":
			targets = []string{pattern}
		case toolFetch:
			var h string
			h, err = hostTarget(pattern)
			targets = []string{h}
		default:
			if pattern == "*" || pattern == "**" {
				targets, err = anyPath(root, action)
				break
			}
			var t string
			t, err = pathTarget(pattern, root, false)
			targets = []string{t}
		}
		s.rules(line, entry, capability, action, targets, err)
	})
	return s.res, err
}

// openCodeRoot is the project of a project's opencode.json (its own
// directory, or the parent of .opencode), "" for the user's.
func openCodeRoot(e Env, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if filepath.Base(dir) == ".opencode" {
		dir = filepath.Dir(dir)
	}
	if filepath.Base(dir) == "opencode" && filepath.Base(filepath.Dir(dir)) == ".config" || e.Home != "" && dir == filepath.Clean(e.Home) {
		return ""
	}
	if x := e.getenv("XDG_CONFIG_HOME"); x != "" && filepath.Dir(dir) == filepath.Clean(x) {
		return ""
	}
	return dir
}
