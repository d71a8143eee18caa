package policyimport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/metnos/gateway/policy"
)

// Codex reads Codex's rules files (rules/*.rules beside each config
// layer: prefix_rule(pattern = [...], decision = "allow" | "prompt" |
// "forbidden"), where the most restrictive matching rule wins) and lists
// the agent-wide approval_policy and sandbox_mode of its config.toml.
var Codex = Format{
	Name: "codex", Label: "Codex",
	Defaults: func(e Env) []string {
		home := e.getenv("CODEX_HOME")
		if home == "" {
			home = filepath.Join(e.Home, ".codex")
		}
		var out []string
		for _, dir := range []string{home, filepath.Join(e.Cwd, ".codex")} {
			rules, _ := filepath.Glob(filepath.Join(dir, "rules", "*.rules"))
			out = append(append(out, rules...), filepath.Join(dir, "config.toml"))
		}
		return out
	},
	Parse: func(_ Env, path string, data []byte) (Result, error) {
		if strings.HasSuffix(path, ".toml") {
			return codexConfig(path, data), nil
		}
		return codexRules(path, data)
	},
}

var codexDecisions = map[string]policy.Action{
	"allow": policy.ActionApprove, "prompt": policy.ActionRequireApproval, "forbidden": policy.ActionBlock,
}

// maxAlternatives bounds the commands one pattern with alternatives
// (["git", ["push", "pull"]]) expands to.
const maxAlternatives = 64

func codexRules(path string, data []byte) (Result, error) {
	s := &sink{path: path}
	calls, err := parseStarlark(data)
	if err != nil {
		return Result{}, err
	}
	for _, c := range calls {
		if c.name != "prefix_rule" {
			s.skip(c.line, c.name+"(…)", "not a prefix_rule: no gateway counterpart")
			continue
		}
		entry := "prefix_rule(pattern = " + c.src["pattern"]
		if d, ok := c.src["decision"]; ok {
			entry += ", decision = " + d
		}
		entry += ")"
		pattern, ok := c.kw["pattern"]
		if !ok {
			s.skip(c.line, entry, "a prefix_rule without a pattern")
			continue
		}
		decision := "allow" // Codex's default
		if d, ok := c.kw["decision"]; ok {
			decision, _ = d.(string)
		}
		action, ok := codexDecisions[decision]
		if !ok {
			s.skip(c.line, entry, "decision %q is none of allow, prompt, forbidden", decision)
			continue
		}
		cmds, err := expandPattern(pattern)
		if err != nil {
			s.skip(c.line, entry, "%v", err)
			continue
		}
		for _, cmd := range cmds {
			targets, err := prefixTargets(cmd)
			s.rules(c.line, entry, toolExec, action, targets, err)
		}
	}
	return s.res, nil
}

// expandPattern turns a pattern (tokens, each a string or a list of
// alternative strings) into the command prefixes it matches.
func expandPattern(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("pattern is not a non-empty list")
	}
	out := []string{""}
	for _, tok := range list {
		var alts []string
		switch t := tok.(type) {
		case string:
			alts = []string{t}
		case []any:
			for _, a := range t {
				s, ok := a.(string)
				if !ok {
					return nil, errors.New("an alternative in pattern is not a string")
				}
				alts = append(alts, s)
			}
		default:
			return nil, errors.New("a pattern token is neither a string nor a list of strings")
		}
		if len(out)*len(alts) > maxAlternatives {
			return nil, fmt.Errorf("pattern expands to more than %d commands", maxAlternatives)
		}
		var next []string
		for _, p := range out {
			for _, a := range alts {
				next = append(next, strings.TrimSpace(p+" "+shellWord(a)))
			}
		}
		out = next
	}
	return out, nil
}

// shellWord quotes a token as a shell would need it.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]#~{}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var codexSetting = regexp.MustCompile(`^\s*(approval_policy|sandbox_mode)\s*=\s*(.+?)\s*$`)

// codexConfig lists config.toml's agent-wide settings: they say how much
// Codex asks, not about which command, so no rule stands for them.
func codexConfig(path string, data []byte) Result {
	s := &sink{path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		if m := codexSetting.FindStringSubmatch(sc.Text()); m != nil {
			s.skip(line, m[1]+" = "+m[2], "a setting of the agent, not a rule: the gateway decides by its own policy and the agent's level; `gateway hook codex --print-config` sets it for the gateway")
		}
	}
	return s.res
}
