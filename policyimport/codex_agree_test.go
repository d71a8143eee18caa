package policyimport

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
)

// TestCodexRulesAgreeWithCodex: the pinned Codex (`codex execpolicy
// check`) reads the test's rules file and decides each command as the
// imported rules make the gateway decide it: forbidden is block, prompt
// require_approval, allow approve, and no matching rule none.
func TestCodexRulesAgreeWithCodex(t *testing.T) {
	dir := os.Getenv("GATEWAY_AGENT_CLIS")
	if dir == "" {
		t.Skip("GATEWAY_AGENT_CLIS is not set (the pinned agent programs)")
	}
	const file = "testdata/codex/rules/default.rules"
	res, err := Import(Codex, Env{Home: t.TempDir()}, []string{file})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]policy.Action{"forbidden": policy.ActionBlock, "prompt": policy.ActionRequireApproval, "allow": policy.ActionApprove, "": ""}
	var n policy.Normalizer
	for _, cmd := range []string{"git push origin main", "git push", "git reset --hard", "gh pr view 7888", "gh pr view",
		"git status", "git status --short", "python3 -c 1", "git pushx", "gh pr --repo openai/codex view 7888", "ls"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		c := exec.CommandContext(ctx, filepath.Join(dir, "codex"), append([]string{"execpolicy", "check", "--rules", file}, strings.Fields(cmd)...)...)
		c.Env = append(os.Environ(), "HOME="+t.TempDir(), "CODEX_HOME="+t.TempDir())
		out, err := c.Output()
		cancel()
		if err != nil {
			t.Fatalf("codex execpolicy check %s: %v", cmd, err)
		}
		var got struct{ Decision string }
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("codex said %q: %v", out, err)
		}
		var ours policy.Action
		for _, r := range res.Rules {
			if n.MatchRule(policy.KindExact, r.Target, cmd) {
				ours = r.Action
				break
			}
		}
		if ours != want[got.Decision] {
			t.Errorf("%q: Codex decides %q, the imported rules %q", cmd, got.Decision, ours)
		}
	}
}
