package policyimport

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/metnos/gateway/policy"
)

// ClaudeCode reads Claude Code's settings files: permissions.allow,
// permissions.ask and permissions.deny, whose entries are "Tool" or
// "Tool(specifier)". Claude Code weighs deny, then ask, then allow,
// whatever the order or the file.
var ClaudeCode = Format{
	Name: "claude-code", Label: "Claude Code",
	Defaults: func(e Env) []string {
		return []string{
			filepath.Join(e.Home, ".claude", "settings.json"),
			filepath.Join(e.Cwd, ".claude", "settings.json"),
			filepath.Join(e.Cwd, ".claude", "settings.local.json"),
		}
	},
	Parse: func(e Env, path string, data []byte) (Result, error) {
		return parseClaudeStyle(e, path, data, ".claude", claudeTools)
	},
}

// claudeTools maps Claude Code's tool names in rules to the capability
// its hook asks about. A Read rule covers every tool that reads files,
// an Edit rule every tool that writes them.
var claudeTools = map[string]string{
	"Bash": toolExec,
	"Read": toolRead, "Grep": toolRead, "Glob": toolRead, "LS": toolRead,
	"Edit": toolWrite, "Write": toolWrite, "MultiEdit": toolWrite, "NotebookEdit": toolWrite,
	"WebFetch": toolFetch,
}

// ruleActions are the rule lists of Claude-style permissions.
var ruleActions = map[string]policy.Action{
	"allow": policy.ActionApprove, "ask": policy.ActionRequireApproval, "deny": policy.ActionBlock,
}

// parseClaudeStyle reads permissions.allow/ask/deny of a settings file
// (Claude Code's, Qwen Code's); marker is the project directory's
// settings folder (".claude"). Other keys under permissions are settings
// of the agent, not rules, and are listed.
func parseClaudeStyle(e Env, path string, data []byte, marker string, tools map[string]string) (Result, error) {
	s := &sink{path: path}
	root := projectRoot(e, path, marker)
	err := walkJSON(data, func(p []string, v any, line int) {
		if len(p) < 2 || p[0] != "permissions" {
			return
		}
		action, isList := ruleActions[p[1]]
		entry, isString := v.(string)
		switch {
		case !isList:
			s.skip(line, "permissions."+strings.Join(p[1:], ".")+" = "+fmt.Sprint(v),
				"a setting of the agent, not a rule: the gateway decides by its own policy and the agent's level")
		case len(p) != 3 || !isString:
			s.skip(line, "permissions."+strings.Join(p[1:], "."), "not a rule string")
		default:
			claudeEntry(s, line, entry, action, root, tools)
		}
	})
	return s.res, err
}

// claudeEntry turns one "Tool(specifier)" of a Claude-style list.
func claudeEntry(s *sink, line int, entry string, action policy.Action, root string, tools map[string]string) {
	tool, spec, hasSpec, err := splitEntry(entry)
	if err != nil {
		s.skip(line, entry, "%v", err)
		return
	}
	capability, ok := tools[tool]
	if !ok {
		s.skip(line, entry, "%s has no built-in capability: map it in the gateway's [hooks.*.tools] and write the rule on that capability", tool)
		return
	}
	var targets []string
	switch capability {
	case toolExec:
		targets, err = claudeCommand(spec, hasSpec)
	case toolFetch:
		var h string
		switch {
		case !hasSpec:
			h = "*"
		case !strings.HasPrefix(spec, "domain:"):
			err = fmt.Errorf("want WebFetch(domain:HOST), got %q", spec)
		default:
			h, err = hostTarget(spec)
		}
		targets = []string{h}
	default:
		if !hasSpec || spec == "*" || spec == "**" {
			targets, err = anyPath(root, action)
			break
		}
		var t string
		t, err = pathTarget(spec, root, true)
		targets = []string{t}
	}
	s.rules(line, entry, capability, action, targets, err)
}
