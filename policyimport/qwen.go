package policyimport

import (
	"path/filepath"
)

// Qwen reads Qwen Code's settings files: permissions.allow, ask and deny
// (Claude Code's shape, with Qwen's tool names and aliases), and the
// older tools.allowed / tools.exclude / tools.core lists of Gemini CLI's
// shape, which Qwen still reads.
var Qwen = Format{
	Name: "qwen", Label: "Qwen Code",
	Defaults: func(e Env) []string {
		return []string{filepath.Join(e.Home, ".qwen", "settings.json"), filepath.Join(e.Cwd, ".qwen", "settings.json")}
	},
	Parse: func(e Env, path string, data []byte) (Result, error) {
		return parseGeminiStyleWith(e, path, data, ".qwen", nil, qwenPermissions)
	},
}

// qwenTools are the names Qwen Code's permission rules accept: its own
// tool names, and Claude Code's as aliases.
var qwenTools = func() map[string]string {
	m := map[string]string{"Shell": toolExec, "ListFiles": toolRead, "ReadManyFiles": toolRead, "WriteFile": toolWrite,
		"ReadFile": toolRead, "notebook_edit": toolWrite}
	for _, t := range []map[string]string{claudeTools, geminiTools} {
		for k, v := range t {
			m[k] = v
		}
	}
	return m
}()

// qwenPermissions reads one value under permissions.
func qwenPermissions(s *sink, root string, p []string, v any, line int) bool {
	if len(p) < 2 || p[0] != "permissions" {
		return false
	}
	action, isList := ruleActions[p[1]]
	entry, isString := v.(string)
	switch {
	case !isList:
		s.skip(line, "permissions."+p[1], "a setting of the agent, not a rule: the gateway decides by its own policy and the agent's level")
	case len(p) != 3 || !isString:
		s.skip(line, "permissions."+p[1], "not a rule string")
	default:
		claudeEntry(s, line, entry, action, root, qwenTools)
	}
	return true
}
