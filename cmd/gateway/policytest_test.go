package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyTest: `gateway policy test` decides each case with the
// config's rules and the guard; it prints the failing ones (by name, else
// "case N") with the outcome and the reason and exits 1, exits 0 when all
// pass, and 2 for a malformed file.
func TestPolicyTest(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state"}[k] }
	write := func(name, body string) string {
		p := filepath.Join(home, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := write("gw.toml", `
[[policy.rules]]
capability = "code:exec"
target = "npm test -- --watch*"
action = "approve"

[[policy.rules]]
capability = "network:http"
target = "*.evil.example"
action = "block"
`)
	good := `
[[case]]
name = "npm test is pre-approved"
level = "Supervised"
capability = "code:exec"
target = "npm test -- --watch=false"
expect = "allowed"

[[case]]
level = "Full"
capability = "network:http"
target = "https://x.evil.example/"
expect = "denied"

[[case]]
level = "Supervised"
capability = "code:exec"
target = "rm -rf /"
expect = "denied"

[[case]]
level = "ReadOnly"
capability = "fs:write"
target = "/tmp/a"
expect = "denied"
`
	r := runCLI(context.Background(), getenv, "", "policy", "test", "--config", cfg, write("ok.toml", good))
	if r.code != 0 || !strings.Contains(r.stdout, "all 4 cases passed") {
		t.Fatalf("all good: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	wrong := good + `
[[case]]
level = "Supervised"
capability = "code:exec"
target = "npm publish"
expect = "allowed"
`
	r = runCLI(context.Background(), getenv, "", "policy", "test", "--config", cfg, write("wrong.toml", wrong))
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL case 5: code:exec npm publish at Supervised: want allowed, got approval_required (") ||
		!strings.Contains(r.stdout, "1 of 5 cases failed") || strings.Contains(r.stdout, "npm test is pre-approved") {
		t.Fatalf("a wrong case: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	for name, body := range map[string]string{
		"unknown key":   "[[case]]\nlevel = \"Full\"\ncapability = \"fs:read\"\ntarget = \"/a\"\nexpect = \"allowed\"\nexpcet = \"x\"\n",
		"bad expect":    "[[case]]\nlevel = \"Full\"\ncapability = \"fs:read\"\ntarget = \"/a\"\nexpect = \"yes\"\n",
		"bad level":     "[[case]]\nlevel = \"Max\"\ncapability = \"fs:read\"\ntarget = \"/a\"\nexpect = \"allowed\"\n",
		"unknown cap":   "[[case]]\nlevel = \"Full\"\ncapability = \"fs:rm\"\ntarget = \"/a\"\nexpect = \"allowed\"\n",
		"no cases":      "# nothing\n",
		"not toml":      "[[case]\n",
		"unknown agent": "[[case]]\nlevel = \"Full\"\ncapability = \"fs:read\"\ntarget = \"/a\"\nagent = \"ghost\"\nexpect = \"allowed\"\n",
	} {
		r := runCLI(context.Background(), getenv, "", "policy", "test", "--config", cfg, write("bad.toml", body))
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%s: exit %d, stderr %q, want 2 and a message", name, r.code, r.stderr)
		}
	}
}
