package policyimport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/metnos/gateway/policy"
)

// geminiPolicyRule is one [[rule]] of a Gemini CLI policy file.
type geminiPolicyRule struct {
	ToolName      any     `toml:"toolName"`      // a name or a list
	CommandPrefix any     `toml:"commandPrefix"` // a prefix or a list
	CommandRegex  string  `toml:"commandRegex"`
	ArgsPattern   string  `toml:"argsPattern"`
	MCPName       string  `toml:"mcpName"`
	Decision      string  `toml:"decision"`
	Priority      float64 `toml:"priority"`
	Modes         []string
	Subagent      string `toml:"subagent"`
}

var geminiDecisions = map[string]policy.Action{
	"allow": policy.ActionApprove, "ask_user": policy.ActionRequireApproval, "deny": policy.ActionBlock,
}

// geminiPolicy reads a Gemini CLI policy file (part of the Gemini format:
// policies/*.toml, where "Always allow" is saved).
func geminiPolicy(e Env, path string, data []byte) (Result, error) {
	var f struct{ Rule []geminiPolicyRule }
	if _, err := toml.Decode(string(data), &f); err != nil {
		return Result{}, fmt.Errorf("not a Gemini CLI policy file: %v", err)
	}
	s := &sink{path: path}
	dir := filepath.Dir(filepath.Dir(path)) // the .gemini the policies folder is in
	root := projectRoot(e, filepath.Join(dir, "settings.json"), ".gemini")
	tier := 4.0 // the user's
	if root != "" {
		tier = 3 // a project's
	}
	lines := ruleLines(data)
	for i, r := range f.Rule {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		entry := fmt.Sprintf("[[rule]] toolName = %s, decision = %q", asJSON(r.ToolName), r.Decision)
		if r.CommandPrefix != nil {
			entry += ", commandPrefix = " + asJSON(r.CommandPrefix)
		}
		action, ok := geminiDecisions[r.Decision]
		switch {
		case !ok:
			s.skip(line, entry, "decision %q is none of allow, ask_user, deny", r.Decision)
			continue
		case r.CommandRegex != "" || r.ArgsPattern != "":
			s.skip(line, entry, "a regular expression over the call's arguments, which no gateway pattern can stand for")
			continue
		case r.MCPName != "" || r.Subagent != "":
			s.skip(line, entry, "an MCP server's or a subagent's tool: map it in [hooks.gemini.tools] and write the rule on that capability")
			continue
		case len(r.Modes) > 0 && !containsString(r.Modes, "default"):
			s.skip(line, entry, "applies only in the approval modes %v, which the gateway does not have", r.Modes)
			continue
		}
		for _, tool := range stringList(r.ToolName) {
			capability, known := geminiTools[tool]
			var targets []string
			var err error
			switch {
			case tool == "*":
				capability, targets = "*", []string{"*"}
			case !known:
				s.skip(line, entry, "%s has no built-in capability: map it in [hooks.gemini.tools] and write the rule on that capability", tool)
				continue
			case capability == toolExec && r.CommandPrefix != nil:
				for _, p := range stringList(r.CommandPrefix) {
					t, perr := prefixTargets(p)
					if perr != nil {
						err = perr
					}
					targets = append(targets, t...)
				}
			case capability == toolExec, capability == toolFetch:
				targets = []string{"*"}
			default:
				targets, err = anyPath(root, action)
			}
			s.ranked(line, entry, capability, action, tier+r.Priority/1000, targets, err)
		}
	}
	return s.res, nil
}

// ruleLines are the lines of the [[rule]] headers, in order.
func ruleLines(data []byte) []int {
	var out []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "[[rule]]" {
			out = append(out, n)
		}
	}
	return out
}

// asJSON writes a TOML value as JSON writes it (as TOML would, for
// strings and lists of strings).
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// stringList reads a TOML string or list of strings.
func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
