package policyimport

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no agent file, however malformed, panics a format's parser,
// and every rule it makes names its source and has a capability, a
// target and an action.
func FuzzParse(f *testing.F) {
	for _, p := range []string{
		"testdata/claude-code/proj/.claude/settings.json", "testdata/codex/rules/default.rules", "testdata/codex/config.toml",
		"testdata/gemini/proj/.gemini/settings.json", "testdata/gemini/proj/.gemini/policies/auto-saved.toml",
		"testdata/qwen/proj/.qwen/settings.json", "testdata/copilot/config.json", "testdata/copilot/copilot-safe.sh",
		"testdata/opencode/proj/opencode.json",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), string(b))
	}
	f.Fuzz(func(t *testing.T, which uint8, data string) {
		names := []string{"proj/.claude/settings.json", "rules/x.rules", "config.toml", "proj/.gemini/settings.json",
			"proj/.gemini/policies/x.toml", "proj/.qwen/settings.json", "config.json", "wrapper.sh", "proj/opencode.json"}
		formats := []Format{ClaudeCode, Codex, Codex, Gemini, Gemini, Qwen, Copilot, Copilot, OpenCode}
		i := int(which) % len(names)
		path := filepath.Join("/fuzz", names[i])
		res, err := formats[i].Parse(Env{Home: "/home/you", Cwd: "/fuzz/proj"}, path, []byte(data))
		if err != nil {
			return
		}
		for _, r := range res.Rules {
			if r.Capability == "" || r.Target == "" || r.Action == "" || r.Source == "" {
				t.Fatalf("an incomplete rule %+v from %q", r, data)
			}
		}
	})
}
