package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyCLI_PolicyStepUp: with [web] policy_step_up = "passkey" the
// command line adds no approve rule and no grant, and turns no rule into
// an approve rule, as the admin API refuses them (step_up_required): each
// is an admin's passkey assertion on the web page. Block rules, removals
// and revokes, which only narrow what agents may do, still work.
func TestPolicyCLI_PolicyStepUp(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gateway.toml")
	writeFile(t, cfgPath, "[storage]\npath = \""+filepath.Join(dir, "gateway.db")+"\"\n\n[web]\npolicy_step_up = \"passkey\"\n")
	getenv := func(k string) string { return map[string]string{"HOME": dir, "USER": "tester"}[k] }
	cli := func(args ...string) cliResult {
		return runCLI(context.Background(), getenv, "", append(args, "--config", cfgPath)...)
	}
	refused := func(what string, r cliResult) {
		t.Helper()
		if r.code != exitFail || !strings.Contains(r.stderr, "step_up_required") || !strings.Contains(r.stderr, "policy_step_up") {
			t.Errorf("%s: %d %q %q, want refused with step_up_required", what, r.code, r.stdout, r.stderr)
		}
	}
	refused("rules add approve", cli("policy", "rules", "add", "--capability", "network:http", "--target", "*.example.com",
		"--action", "approve", "--sender", "owner"))
	refused("grant", cli("policy", "grant", "--channel", "web", "--sender", "owner", "--capability", "fs:write",
		"--target", "/srv/x/*"))
	r := cli("policy", "rules", "add", "--capability", "network:http", "--target", "*.example.com", "--action", "block",
		"--sender", "owner")
	if r.code != 0 || !strings.Contains(r.stdout, `"action":"block"`) {
		t.Fatalf("rules add block: %d %q %q", r.code, r.stdout, r.stderr)
	}
	id := strings.Split(strings.Split(r.stdout, `"id":"`)[1], `"`)[0]
	refused("rules update to approve", cli("policy", "rules", "update", id, "--action", "approve"))
	if r := cli("policy", "rules", "rm", id); r.code != 0 {
		t.Errorf("rules rm: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := cli("policy", "revoke", "7"); r.code != 0 || !strings.Contains(r.stdout, "no-op") {
		t.Errorf("revoke: %d %q %q", r.code, r.stdout, r.stderr)
	}
}
