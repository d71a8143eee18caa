package hooks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/policyimport"
)

// TestCodexWritesItsRules: the pinned Codex writes the rule itself, as it
// does when a person approves a command with "don't ask again for
// commands that start with …": in its app server, a command asking to
// leave the read-only sandbox is approved with an execpolicy amendment;
// Codex records it in $CODEX_HOME/rules/default.rules; and `gateway
// policy import --from codex` of that file approves the same command.
func TestCodexWritesItsRules(t *testing.T) {
	codex := agenttest.Bin(t, "codex")
	m := codexModelArgs(t, map[string]any{"cmd": "touch made-by-codex", "sandbox_permissions": "require_escalated",
		"justification": "needs to leave the sandbox", "prefix_rule": []string{"touch", "made-by-codex"}})
	home := t.TempDir()
	proj, codexHome := filepath.Join(home, "proj"), filepath.Join(home, ".codex")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(codexHome, "config.toml"), fmt.Sprintf(`model_provider = "standin"
model = "gpt-5.1-codex"

[model_providers.standin]
name = "stand-in"
base_url = "%s/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
`, m.URL))
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8", "CODEX_HOME=" + codexHome, "STANDIN_API_KEY=x"}
	var asked []string
	prompts := codexAppTurnAnswering(t, codex, proj, env, map[string]any{"approvalPolicy": "on-request", "sandbox": "read-only"},
		func(method string, params json.RawMessage) any {
			asked = append(asked, method+" "+string(params))
			return map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []string{"touch", "made-by-codex"}}}
		})
	rules := filepath.Join(codexHome, "rules", "default.rules")
	data, err := os.ReadFile(rules)
	if err != nil {
		t.Fatalf("Codex wrote no %s (prompts %v):\n%s", rules, prompts, strings.Join(asked, "\n"))
	}
	t.Logf("Codex wrote:\n%s", data)
	res, err := policyimport.Import(policyimport.Codex, policyimport.Env{Home: home, Cwd: proj}, []string{rules})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rules {
		got = append(got, fmt.Sprintf("%s %q %s", r.Capability, r.Target, r.Action))
	}
	want := []string{`code:exec "touch made-by-codex" approve`, `code:exec "touch made-by-codex *" approve`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(res.Skipped) != 0 {
		t.Fatalf("the import of what Codex wrote: %q, skipped %+v; want %q", got, res.Skipped, want)
	}
	for _, r := range res.Rules {
		if errs := policy.CheckRule(policy.Rule{Capability: r.Capability, Target: r.Target, Action: r.Action}, nil); r.Target == "touch made-by-codex" && len(errs) != 0 {
			t.Errorf("the exact command's rule is refused: %v", errs)
		}
	}
}
