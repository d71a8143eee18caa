package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDBCommands_NoAgentTokens: the database-only commands run on the
// server's config from a shell without any of its secret variables (the
// agents' tokens, the messengers', the web admin token, a webhook secret),
// while serve and config check still refuse it, naming every key and
// variable on one line ("N problems: a; b", no stray "; " after the colon).
func TestDBCommands_NoAgentTokens(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gateway.toml")
	body := "[storage]\npath = \"" + filepath.Join(dir, "gw.db") + "\"\n" +
		"[[agents]]\nid = \"a1\"\ntoken_env = \"QA_A1_TOKEN\"\n" +
		"[web]\nadmin_token_env = \"QA_WEB_ADMIN\"\n" +
		"[telegram]\ntoken_env = \"QA_TG_TOKEN\"\nchat_id = 1\napprovers = [1]\nwebhook_url = \"https://gw.example.com/telegram/webhook\"\nwebhook_secret_env = \"QA_TG_SECRET\"\n" +
		"[slack]\nbot_token_env = \"QA_SLACK_BOT\"\nsigning_secret_env = \"QA_SLACK_SIGNING\"\nchannel_id = \"C1\"\napprovers = [\"U1\"]\n"
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
		{"login"},
		{"logout", "--all"},
	} {
		r := runCLI(ctx, getenv, "", append(args, "--config", cfgPath)...)
		if r.code != 0 || strings.Contains(r.stderr, "QA_") {
			t.Errorf("%v without the agent token: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	for _, args := range [][]string{{"serve"}, {"config", "check"}} {
		r := runCLI(ctx, getenv, "", append(args, "--config", cfgPath)...)
		if r.code == 0 || !strings.Contains(r.stderr, "6 problems: agents[0].token_env: QA_A1_TOKEN is empty; web.admin_token_env: QA_WEB_ADMIN is empty;") ||
			!strings.Contains(r.stderr, "slack.signing_secret_env: QA_SLACK_SIGNING is empty") {
			t.Errorf("%v without the agent token: exit %d, stderr %q; want refused naming agents[0].token_env", args, r.code, r.stderr)
		}
	}
}
