package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDBCommands_NoAgentTokens: the database-only commands run on the
// server's config from a shell without the agents' token variables, while
// serve and config check still refuse it, naming the key and the variable.
func TestDBCommands_NoAgentTokens(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gateway.toml")
	body := "[storage]\npath = \"" + filepath.Join(dir, "gw.db") + "\"\n" +
		"[[agents]]\nid = \"a1\"\ntoken_env = \"QA_A1_TOKEN\"\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string { return map[string]string{"HOME": dir, "XDG_STATE_HOME": dir + "/state"}[k] }
	ctx := context.Background()
	for _, args := range [][]string{
		{"migrate"},
		{"audit", "verify"},
		{"audit"},
		{"policy", "grants"},
		{"policy", "rules"},
		{"prune", "--dry-run"},
	} {
		r := runCLI(ctx, getenv, "", append(args, "--config", cfgPath)...)
		if r.code != 0 || strings.Contains(r.stderr, "QA_A1_TOKEN") {
			t.Errorf("%v without the agent token: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"serve"}, {"config", "check"}} {
		r := runCLI(ctx, getenv, "", append(args, "--config", cfgPath)...)
		if r.code == 0 || !strings.Contains(r.stderr, "agents[0].token_env: QA_A1_TOKEN is empty") {
			t.Errorf("%v without the agent token: exit %d, stderr %q; want refused naming agents[0].token_env", args, r.code, r.stderr)
		}
	}
}
