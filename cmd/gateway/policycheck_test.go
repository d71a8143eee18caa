package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestPolicyCheck_NoTarget: without --target, `gateway policy check LEVEL
// CAP` answers the table's outcome, as the seed's CLI does, instead of
// refusing the question.
func TestPolicyCheck_NoTarget(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state"}[k] }
	tests := []struct {
		level, capability, want string
	}{
		{"Full", "code:exec", "approval_required"},
		{"Full", "fs:read", "allowed"},
		{"Supervised", "fs:write", "approval_required"},
		{"ReadOnly", "fs:write", "denied"},
		{"ReadOnly", "mail:read", "approval_required"},
		{"full", "mail:send", "approval_required"},
	}
	for _, tt := range tests {
		t.Run(tt.level+" "+tt.capability, func(t *testing.T) {
			r := runCLI(context.Background(), getenv, "", "policy", "check", tt.level, tt.capability, "--explain")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var out struct {
				Outcome string `json:"outcome"`
				Reason  string `json:"reason"`
				Trace   []struct {
					Layer string `json:"layer"`
				} `json:"trace"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("%q: %v", r.stdout, err)
			}
			if out.Outcome != tt.want || !strings.Contains(out.Reason, "no --target") || len(out.Trace) != 1 || out.Trace[0].Layer != "table" {
				t.Errorf("check = %s, want %s from the table alone", r.stdout, tt.want)
			}
		})
	}
	// With a target the whole decision still runs, vaglio included.
	r := runCLI(context.Background(), getenv, "", "policy", "check", "Full", "fs:read", "--target", "/etc/shadow.old")
	if r.code != 0 || !strings.Contains(r.stdout, `"outcome":"denied"`) || !strings.Contains(r.stdout, "guard") {
		t.Errorf("check with a target = %d %s %s", r.code, r.stdout, r.stderr)
	}
}

// TestGlobalConfigFlag: --config may also stand before the command, as in
// `gateway --config f.toml policy rules`.
func TestGlobalConfigFlag(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state"}[k] }
	path := home + "/gw.toml"
	if err := os.WriteFile(path, []byte("[storage]\npath = \""+home+"/gw.db\"\n\n[[policy.rules]]\ncapability = \"fs:read\"\ntarget = \"/srv/**\"\naction = \"block\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--config", path, "policy", "rules"},
		{"--config=" + path, "policy", "rules"},
		{"policy", "rules", "--config", path},
	} {
		r := runCLI(context.Background(), getenv, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, `"id":"config:1"`) {
			t.Errorf("%q: exit %d, %s %s", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := runCLI(context.Background(), getenv, "", "--config", path); r.code != exitUsage {
		t.Errorf("--config without a command: exit %d", r.code)
	}
}

// TestUnknownFlag: a mistyped flag is named as a flag (it was the bare word).
func TestUnknownFlag(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state"}[k] }
	r := runCLI(context.Background(), getenv, "", "policy", "rules", "update", "api:1", "--capability", "fs:read")
	if r.code != exitUsage || r.stderr != "gateway policy: unknown flag --capability\n" {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestPolicyCheck_GatewayOwnFiles: the CLI's decision guards the files of
// the config it runs with: the generated token file, the database and its
// -wal, the config file, the state directory, at Full.
func TestPolicyCheck_GatewayOwnFiles(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state"}[k] }
	cfgPath := home + "/gw.toml"
	if err := os.WriteFile(cfgPath, []byte("[storage]\npath = \""+home+"/data/gw.db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{home + "/data/agent-token", home + "/data/gw.db-wal", cfgPath,
		home + "/state/metnos/agent-token", "~/state/metnos/gateway.db", home + "/data"} {
		r := runCLI(context.Background(), getenv, "", "policy", "check", "Full", "fs:read", "--target", target, "--config", cfgPath)
		if r.code != 0 || !strings.Contains(r.stdout, `"outcome":"denied"`) || !strings.Contains(r.stdout, "gateway's own") {
			t.Errorf("check %s = %d %s %s", target, r.code, r.stdout, r.stderr)
		}
	}
}
