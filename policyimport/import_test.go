package policyimport

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the .golden files")

// render lists a result one line an entry, with the test data's
// directory written as TESTDATA.
func render(t *testing.T, res Result) string {
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range res.Rules {
		fmt.Fprintf(&b, "rule %s %q %s  <- %s %s\n", r.Capability, r.Target, r.Action, r.Source, r.Entry)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "skip %s %s: %s\n", s.Source, s.Entry, s.Why)
	}
	return strings.ReplaceAll(strings.ReplaceAll(b.String(), abs, "TESTDATA"), "testdata", "TESTDATA")
}

// TestImport_Formats: each agent's files, as its documentation writes
// them, become the rules a person would write, in the order that makes
// the gateway decide as the agent did (the most restrictive first; for
// OpenCode, the last entry first), each naming its file and line; every
// entry that makes no rule is listed with why.
func TestImport_Formats(t *testing.T) {
	abs, _ := filepath.Abs("testdata")
	home := filepath.Join(abs, "home")
	for _, tc := range []struct {
		format string
		files  []string
	}{
		{"claude-code", []string{"testdata/claude-code/proj/.claude/settings.json"}},
		{"codex", []string{"testdata/codex/rules/default.rules", "testdata/codex/config.toml"}},
		{"gemini", []string{"testdata/gemini/proj/.gemini/settings.json", "testdata/gemini/proj/.gemini/policies/auto-saved.toml"}},
		{"qwen", []string{"testdata/qwen/proj/.qwen/settings.json"}},
		{"copilot", []string{"testdata/copilot/config.json", "testdata/copilot/copilot-safe.sh"}},
		{"opencode", []string{"testdata/opencode/proj/opencode.json"}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f, ok := Named(tc.format)
			if !ok {
				t.Fatalf("no format %q", tc.format)
			}
			res, err := Import(f, Env{Home: home, Cwd: abs}, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, res)
			golden := filepath.Join("testdata", tc.format+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestWalkJSON_JSONC: comments and trailing commas (JSONC, as OpenCode
// and Gemini CLI read their files) are read as space, lines still count,
// and a string holding // or a comma before } is left whole.
func TestWalkJSON_JSONC(t *testing.T) {
	src := "{\n  // a comment\n  \"a\": [\"x // y\", \"z,}\",],\n  /* b */ \"b\": 1,\n}\n"
	var got []string
	if err := walkJSON([]byte(src), func(p []string, v any, line int) {
		got = append(got, fmt.Sprintf("%s=%v@%d", strings.Join(p, "."), v, line))
	}); err != nil {
		t.Fatal(err)
	}
	if want := "a.0=x // y@3 a.1=z,}@3 b=1@4"; strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}
