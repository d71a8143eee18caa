package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/policy"
)

// TestHook_ResolvesOnTheAgentsMachine: `gateway hook` runs where the
// agent runs, so it resolves links there and sends the agent's $HOME.
// A Read through a link the agent made into a fake ~/.ssh is denied by
// the guard (the text alone names an ordinary project file), the card
// says where it resolves, and a search of the agent's home asks though
// the gateway's own home is elsewhere.
func TestHook_ResolvesOnTheAgentsMachine(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "agent")
	proj := filepath.Join(home, "src", "app")
	for _, d := range []string{filepath.Join(home, ".ssh"), proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../.ssh/id_rsa", filepath.Join(proj, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(proj, "docs")); err != nil {
		t.Fatal(err)
	}
	g := startLive(t, func(c *config.Config) { c.Agents[0].Autonomy = policy.Full }) // the gateway's home: /home/test
	env := agentEnv(t, g.URL, "HOME", home)
	event := func(tool, id string, input map[string]any) string {
		return strings.Replace(preToolUse(t, tool, id, input), `"/home/r/proj"`, `"`+proj+`"`, 1)
	}

	for _, tc := range []struct{ tool, id string }{{"Read", "toolu_link_file"}, {"Grep", "toolu_link_dir"}} {
		input := map[string]any{"file_path": "notes.txt"}
		if tc.tool == "Grep" {
			input = map[string]any{"pattern": "BEGIN", "path": "docs"}
		}
		r := runCLI(context.Background(), env, event(tc.tool, tc.id, input), "hook", "claude-code")
		out := hookOutput(t, r.stdout)
		if r.code != exitOK || out.Decision() != hooks.Deny || !strings.Contains(out.Reason(), "forbidden path .ssh in target") {
			t.Fatalf("%s: exit %d %s %s", tc.tool, r.code, r.stdout, r.stderr)
		}
		req := g.request(t, tc.id)
		if !strings.HasPrefix(req.Target, filepath.Join(home, ".ssh")) || !strings.Contains(req.Summary, "resolves to "+req.Target) {
			t.Fatalf("%s: request target %q summary %q", tc.tool, req.Target, req.Summary)
		}
	}

	// An ordinary file of the project at Full: allowed, nothing resolved.
	r := runCLI(context.Background(), env, event("Read", "toolu_plain", map[string]any{"file_path": "main.go"}), "hook", "claude-code")
	if out := hookOutput(t, r.stdout); out.Decision() != hooks.Allow {
		t.Fatalf("plain read: %s", r.stdout)
	}
	// A search of the agent's home asks (it holds ~/.ssh), at Full, though
	// the gateway's own home is /home/test.
	r = runCLI(context.Background(), env, event("Grep", "toolu_home", map[string]any{"pattern": "x", "path": home}), "hook", "claude-code", "--wait", "1s")
	if out := hookOutput(t, r.stdout); out.Decision() != hooks.Ask {
		t.Fatalf("grep of the agent's home: %s", r.stdout)
	}
	if req := g.request(t, "toolu_home"); !strings.Contains(req.Reason, "holds a forbidden path") {
		t.Fatalf("grep of the agent's home: %+v", req)
	}
}
