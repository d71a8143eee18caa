package hooks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

// fakeMachine is an agent's machine made in a temp dir: a home with
// ~/.ssh/id_rsa, and a project holding links into it that the agent made
// earlier (absolute, relative, through a linked directory, a loop).
type fakeMachine struct{ root, home, proj string }

func newFakeMachine(t *testing.T) fakeMachine {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := fakeMachine{root: root, home: filepath.Join(root, "home", "agent"), proj: filepath.Join(root, "home", "agent", "src", "app")}
	for _, d := range []string{filepath.Join(m.home, ".ssh"), filepath.Join(m.proj, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, s := range map[string]string{filepath.Join(m.home, ".ssh", "id_rsa"): "KEY", filepath.Join(m.proj, "main.go"): "package main"} {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"keys":      filepath.Join(m.home, ".ssh"),     // absolute, to a directory
		"notes.txt": "../../.ssh/id_rsa",               // relative, to a file
		"sub/up":    "..",                              // a loop-free link back up
		"hop":       "keys",                            // a link to a link
		"loop":      "loop",                            // a link to itself
		"dangling":  filepath.Join(m.home, ".ssh/new"), // to a file not there yet (a write creates it)
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(m.proj, name)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestResolvePath: a path resolved on the real file system, every link
// followed up to the first component that does not exist.
func TestResolvePath(t *testing.T) {
	m := newFakeMachine(t)
	key := filepath.Join(m.home, ".ssh", "id_rsa")
	cases := []struct{ name, in, want string }{
		{"plain file", filepath.Join(m.proj, "main.go"), filepath.Join(m.proj, "main.go")},
		{"a linked directory", filepath.Join(m.proj, "keys", "id_rsa"), key},
		{"a relative link to a file", filepath.Join(m.proj, "notes.txt"), key},
		{"a link to a link", filepath.Join(m.proj, "hop", "id_rsa"), key},
		{"through sub/up", filepath.Join(m.proj, "sub", "up", "keys"), filepath.Join(m.home, ".ssh")},
		{"a missing tail under a link", filepath.Join(m.proj, "keys", "new", "x"), filepath.Join(m.home, ".ssh", "new", "x")},
		{"a dangling link", filepath.Join(m.proj, "dangling"), filepath.Join(m.home, ".ssh", "new")},
		{"a glob under a link", filepath.Join(m.proj, "keys", "id_*"), filepath.Join(m.home, ".ssh", "id_*")},
		{"~ is the agent's home", "~/src/app/keys", filepath.Join(m.home, ".ssh")},
		{"a loop", filepath.Join(m.proj, "loop", "x"), ""},
		{"relative: not known here", "keys/id_rsa", ""},
		{"nothing exists", "/nonexistent-37/a/b", "/nonexistent-37/a/b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := hooks.ResolvePath(tc.in, m.home); got != tc.want {
				t.Fatalf("ResolvePath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// The kernel agrees wherever the path exists.
	for _, p := range []string{filepath.Join(m.proj, "keys", "id_rsa"), filepath.Join(m.proj, "notes.txt"), filepath.Join(m.proj, "sub", "up", "hop")} {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := hooks.ResolvePath(p, m.home); got != real {
			t.Errorf("ResolvePath(%q) = %q, the kernel reaches %q", p, got, real)
		}
	}
}

// TestLocalize_Symlinks: what `gateway hook` sends for a tool call on a
// linked path, and what the server then asks about: the resolved path as
// the target, the text on the card, the agent's home on every call.
func TestLocalize_Symlinks(t *testing.T) {
	m := newFakeMachine(t)
	cases := []struct {
		name, adapter, raw string
		target             string
	}{
		{"Claude Code Read through a link", "claude-code",
			rawEvent("claude-code", "Read", m.proj, map[string]any{"file_path": "notes.txt"}), filepath.Join(m.home, ".ssh", "id_rsa")},
		{"Claude Code Grep of a linked tree", "claude-code",
			rawEvent("claude-code", "Grep", m.proj, map[string]any{"pattern": "BEGIN", "path": "keys"}), filepath.Join(m.home, ".ssh")},
		{"Claude Code Glob under a link", "claude-code",
			rawEvent("claude-code", "Glob", m.proj, map[string]any{"pattern": "hop/*"}), filepath.Join(m.home, ".ssh", "*")},
		{"Gemini read_file", "gemini",
			rawEvent("gemini", "read_file", m.proj, map[string]any{"file_path": filepath.Join(m.proj, "keys", "id_rsa")}), filepath.Join(m.home, ".ssh", "id_rsa")},
		{"Codex patch writing through a link", "codex",
			rawEvent("codex", "apply_patch", m.proj, map[string]any{"command": "*** Begin Patch\n*** Add File: keys/authorized_keys\n+k\n*** End Patch"}), filepath.Join(m.home, ".ssh", "authorized_keys")},
		{"Cursor Read", "cursor",
			rawEvent("cursor", "Read", m.proj, map[string]any{"file_path": filepath.Join(m.proj, "notes.txt")}), filepath.Join(m.home, ".ssh", "id_rsa")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ad := adapterNamed(t, tc.adapter)
			ev, err := ad.Decode([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			relay := []byte(tc.raw)
			if ad.Relay != nil {
				relay = ad.Relay(relay)
			}
			sent := hooks.Localize(ad, ev, relay, m.home)
			// The server's side: the event as relayed, mapped, then Local applied.
			sev, err := ad.Decode(sent)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := ad.Map(sev, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs = hooks.LocalOf(sent).Apply(cs)
			var hit *hooks.Call
			for i := range cs {
				if cs[i].Home != m.home {
					t.Errorf("call %d: home %q", i, cs[i].Home)
				}
				if cs[i].Target == tc.target {
					hit = &cs[i]
				}
			}
			if hit == nil {
				t.Fatalf("no call targets %q: %+v", tc.target, cs)
			}
			if !strings.Contains(hit.Summary, "resolves to "+tc.target) {
				t.Errorf("summary %q does not say where it resolves", hit.Summary)
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(sent, &obj); err != nil || obj["tool_input"] == nil && obj["input"] == nil && obj["tool_name"] == nil && obj["toolName"] == nil {
				t.Errorf("the event itself was not kept: %s", sent)
			}
		})
	}
	t.Run("no link: no paths, the home only", func(t *testing.T) {
		raw := rawEvent("claude-code", "Read", m.proj, map[string]any{"file_path": "main.go"})
		ev, _ := hooks.ClaudeCode.Decode([]byte(raw))
		l := hooks.LocalOf(hooks.Localize(hooks.ClaudeCode, ev, []byte(raw), m.home))
		if l == nil || l.Home != m.home || len(l.Paths) != 0 {
			t.Fatalf("%+v", l)
		}
	})
	t.Run("an event without Local is left alone", func(t *testing.T) {
		cs := []hooks.Call{{Capability: "fs:read", Target: "/a"}}
		if got := hooks.LocalOf([]byte(`{"tool_name":"Read"}`)).Apply(cs); got[0].Target != "/a" || got[0].Home != "" {
			t.Fatalf("%+v", got)
		}
	})
}
