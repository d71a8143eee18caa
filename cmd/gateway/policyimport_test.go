package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/metnos/gateway/client"
)

// importFixtures are, per agent, a permission file (as its documentation
// shapes it) that allows `git status`, tries to allow arbitrary commands
// and names a tool the gateway has no capability for.
var importFixtures = map[string]struct{ path, body string }{
	"claude-code": {"proj/.claude/settings.json",
		`{"permissions": {"allow": ["Bash(git status)", "Bash", "WebSearch"]}}`},
	"codex": {"codex/rules/default.rules",
		"prefix_rule(pattern = [\"git\", \"status\"], decision = \"allow\")\nprefix_rule(pattern = [\"bash\"])\nhost_executable(name = \"git\", paths = [\"/usr/bin/git\"])\n"},
	"gemini": {"proj/.gemini/settings.json",
		`{"tools": {"allowed": ["run_shell_command(git status)", "run_shell_command", "google_web_search"]}}`},
	"qwen": {"proj/.qwen/settings.json",
		`{"permissions": {"allow": ["Bash(git status)", "Bash", "WebSearch"]}}`},
	"copilot": {"copilot.sh",
		"copilot --allow-tool 'shell(git status)' --allow-all-tools --allow-tool my-mcp \"$@\"\n"},
	"opencode": {"proj/opencode.json",
		`{"permission": {"bash": {"git status": "allow", "*": "allow"}, "task": "allow"}}`},
}

// TestPolicyImport_RoundTrip: for each agent, its file imported and
// applied through the API (an admin's token) makes a matching request
// allowed by the rule, with no card; the entry that would approve
// arbitrary commands is refused and the one with no capability listed,
// both on stderr; printing gives the TOML with the source of each rule,
// and --simulate how many of the window's requests each would decide and
// change.
func TestPolicyImport_RoundTrip(t *testing.T) {
	for name, fx := range importFixtures {
		t.Run(name, func(t *testing.T) {
			g := startLive(t, nil)
			dir := t.TempDir()
			file := filepath.Join(dir, fx.path)
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, file, fx.body)
			env := map[string]string{"HOME": dir, "GATEWAY_URL": g.URL, "GATEWAY_ADMIN_TOKEN": liveAdminToken}
			getenv := func(k string) string { return env[k] }

			r := runCLI(context.Background(), getenv, "", "policy", "import", "--from", name, file)
			if r.code != 0 || !strings.Contains(r.stdout, "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"git status\"\naction = \"approve\"") ||
				!strings.Contains(r.stdout, "# "+file+":") {
				t.Fatalf("import: %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "refused: "+file+":") || !strings.Contains(r.stderr, "must not match arbitrary targets") ||
				!strings.Contains(r.stderr, "not imported: "+file+":") {
				t.Fatalf("stderr lacks the refused and the unknown entries:\n%s", r.stderr)
			}
			if strings.Contains(r.stdout, `target = "*"`) {
				t.Fatalf("a refused rule was printed:\n%s", r.stdout)
			}

			agent := client.New(g.URL, liveAgentToken)
			before, err := agent.Check(context.Background(), client.Req{Capability: "code:exec", Target: "git status"})
			if err != nil || before.Outcome != "approval_required" {
				t.Fatalf("before: %+v %v", before, err)
			}
			if pending, err := agent.Request(context.Background(), client.Req{Capability: "code:exec", Target: "git status"}, 0); err != nil || pending.Outcome != "approval_required" {
				t.Fatalf("a request before: %+v %v", pending, err)
			}
			r = runCLI(context.Background(), getenv, "", "policy", "import", "--from", name, "--simulate", file)
			if r.code != 0 || !strings.Contains(r.stdout, "# last 7d: would decide 1 of 1 requests, 1 of them changed (approval_required->allowed 1)\n[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"git status\"") {
				t.Fatalf("--simulate: %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			env["GATEWAY_ADMIN_TOKEN"] = liveAgentToken
			if r := runCLI(context.Background(), getenv, "", "policy", "import", "--from", name, "--apply", file); r.code == 0 {
				t.Fatalf("--apply with an agent's token: exit 0\n%s", r.stdout)
			}
			env["GATEWAY_ADMIN_TOKEN"] = liveAdminToken
			r = runCLI(context.Background(), getenv, "", "policy", "import", "--from", name, "--apply", file)
			if r.code != 0 || !strings.Contains(r.stdout, `"target":"git status"`) || !strings.Contains(r.stdout, `"id":"api:`) {
				t.Fatalf("--apply: %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			req, err := agent.Request(context.Background(), client.Req{Capability: "code:exec", Target: "git status"}, 0)
			if err != nil || req.Outcome != "allowed" || req.Decision != "" || !strings.Contains(req.Reason, "rule api:") {
				t.Fatalf("after --apply: %+v %v", req, err)
			}
		})
	}
}

// TestPolicyImport_HostileEntries: what an agent's file holds cannot
// write TOML of its own nor reach the terminal as control characters: an
// entry with line breaks that spell a rule stays one rule's target and a
// comment, and an escape sequence is printed as \x1b.
func TestPolicyImport_HostileEntries(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "proj", ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, file, `{"permissions": {"ask": ["Bash(x\n[[policy.rules]]\ncapability = \"*\"\ntarget = \"*\"\naction = \"approve\")"],
 "allow": ["WebSearch\u001b[2J"]}}`)
	r := runCLI(context.Background(), func(k string) string { return map[string]string{"HOME": dir}[k] }, "", "policy", "import", "--from", "claude-code", file)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got struct {
		Policy struct{ Rules []map[string]string }
	}
	if _, err := toml.Decode(r.stdout, &got); err != nil {
		t.Fatalf("the output is not TOML: %v\n%s", err, r.stdout)
	}
	want := "x\n[[policy.rules]]\ncapability = \"*\"\ntarget = \"*\"\naction = \"approve\""
	if len(got.Policy.Rules) != 1 || got.Policy.Rules[0]["target"] != want || got.Policy.Rules[0]["action"] != "require_approval" {
		t.Fatalf("rules %q from:\n%s", got.Policy.Rules, r.stdout)
	}
	if strings.ContainsRune(r.stderr, 0x1b) || !strings.Contains(r.stderr, `WebSearch\x1b[2J`) {
		t.Fatalf("stderr: %q", r.stderr)
	}
}
