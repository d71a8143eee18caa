package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
)

// TestPolicyRules_CLI_RunningServer: `gateway policy rules add|update|rm`
// work on the database while a server runs on it, and its very next
// decision sees each change; the file's rules are listed read-only.
func TestPolicyRules_CLI_RunningServer(t *testing.T) {
	var dbPath string
	g := startLive(t, func(cfg *config.Config) {
		dbPath = cfg.Storage.Path
		cfg.Policy.Rules = []config.Rule{{Capability: "*", Target: "*password*", Action: "block"}}
	})
	dir := filepath.Dir(dbPath)
	cfgPath := filepath.Join(dir, "cli.toml")
	writeFile(t, cfgPath, "[storage]\npath = \""+dbPath+"\"\n\n[[policy.rules]]\ncapability = \"*\"\ntarget = \"*password*\"\naction = \"block\"\n")
	getenv := func(k string) string { return map[string]string{"HOME": dir, "USER": "tester"}[k] }
	cli := func(args ...string) cliResult {
		return runCLI(context.Background(), getenv, "", append(args, "--config", cfgPath)...)
	}
	agent := client.New(g.URL, liveAgentToken)
	check := func() string {
		t.Helper()
		res, err := agent.Check(context.Background(), client.Req{Capability: "network:http", Target: "api.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Outcome)
	}
	if o := check(); o != "approval_required" {
		t.Fatalf("before: %s", o)
	}

	r := cli("policy", "rules", "add", "--capability", "network:http", "--target", "*.example.com", "--action", "approve",
		"--sender", "owner")
	var ri policy.RuleInfo
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &ri) != nil || ri.Owner != "user" || ri.CreatedBy != "cli:tester" {
		t.Fatalf("rules add: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if o := check(); o != "allowed" {
		t.Fatalf("after add: %s", o)
	}
	if r := cli("policy", "rules", "update", ri.ID, "--action", "block"); r.code != 0 || !strings.Contains(r.stdout, `"action":"block"`) {
		t.Fatalf("rules update: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if o := check(); o != "denied" {
		t.Fatalf("after update: %s", o)
	}
	r = cli("policy", "rules")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.Contains(lines[0], `"source":"config"`) || !strings.Contains(lines[1], `"id":"`+ri.ID+`"`) {
		t.Fatalf("rules: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := cli("policy", "rules", "rm", ri.ID); r.code != 0 || !strings.Contains(r.stdout, `"removed":true`) {
		t.Fatalf("rules rm: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if o := check(); o != "approval_required" {
		t.Fatalf("after rm: %s", o)
	}

	// Errors: a bad field names its flag (exit 2); the file's rules are read-only (exit 1).
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"policy", "rules", "add", "--capability", "fs:wirte", "--target", "*", "--action", "block"}, 2, "--capability"},
		{[]string{"policy", "rules", "add", "--capability", "fs:write", "--target", "*", "--action", "alow"}, 2, "--action"},
		{[]string{"policy", "rules", "add", "--capability", "code:exec", "--target", "*", "--action", "approve"}, 2, "--target"},
		{[]string{"policy", "rules", "add", "--capability", "fs:write", "--target", "*", "--action", "block", "--position", "mid"}, 2, "--position"},
		{[]string{"policy", "rules", "rm", "config:1"}, 1, "config file"},
		{[]string{"policy", "rules", "update", "config:1", "--action", "approve"}, 1, "config file"},
		{[]string{"policy", "rules", "rm", "api:999"}, 1, "not found"},
	} {
		r := cli(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	// The server's own listing agrees with the CLI's.
	if n := strings.Count(cli("policy", "rules").stdout, "\n"); n != 1 {
		t.Errorf("%d rules after the refusals, want 1", n)
	}
}
