package hooks_test

import (
	"fmt"
	"testing"

	"github.com/metnos/gateway/vaglio"
)

// TestPersistence_EveryAdapter: a write by every adapter's write tool to
// each kind of place that runs code later (and to each place git reads
// its config from) reaches the guard as fs:write on that path, which a
// person decides every time; a read of the shipped unit's env file or of
// its real state directory is denied like the database.
func TestPersistence_EveryAdapter(t *testing.T) {
	writes := map[string]func(p string) string{
		"claude-code": func(p string) string {
			return rawEvent("claude-code", "Write", "/home/r/proj", map[string]any{"file_path": p, "content": "x"})
		},
		"codex": func(p string) string {
			return codexEvent("PreToolUse", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Add File: " + p + "\n+x\n*** End Patch\n"})
		},
		"gemini": func(p string) string {
			return geminiEvent("write_file", map[string]any{"file_path": p, "content": "x"})
		},
		"qwen": func(p string) string {
			return qwenEvent("PreToolUse", "write_file", map[string]any{"file_path": p, "content": "x"})
		},
		"copilot":  func(p string) string { return copilotPreEvent("create", map[string]any{"path": p, "file_text": "x"}) },
		"opencode": func(p string) string { return openCodeEvent("write", map[string]any{"filePath": p, "content": "x"}) },
		"cursor": func(p string) string {
			return rawEvent("cursor", "Write", "/home/r/proj", map[string]any{"file_path": p, "contents": "x"})
		},
	}
	kinds := map[string]string{
		"shell start-up file":    "/home/r/.bash_aliases",
		"zsh":                    "/home/r/.zlogin",
		"fish":                   "/home/r/.config/fish/config.fish",
		"Python .pth":            "/home/r/proj/.venv/lib/python3.12/site-packages/x.pth",
		"sitecustomize":          "/home/r/proj/.venv/lib/python3.12/site-packages/sitecustomize.py",
		"user systemd unit":      "/home/r/.local/share/systemd/user/x.service",
		"local systemd unit":     "/usr/local/lib/systemd/system/x.service",
		"OpenCode plugin":        "/home/r/proj/.opencode/plugin/x.ts",
		"Claude settings":        "/home/r/proj/.claude/settings.local.json",
		"Codex config":           "/home/r/.codex/config.toml",
		"Gemini settings":        "/home/r/proj/.gemini/settings.json",
		"Qwen settings":          "/home/r/.qwen/settings.json",
		"Cursor hooks":           "/home/r/proj/.cursor/hooks.json",
		"Copilot":                "/home/r/proj/.github/copilot/settings.json",
		"vimrc":                  "/home/r/.vimrc",
		"nvim":                   "/home/r/.config/nvim/init.lua",
		"emacs":                  "/home/r/.emacs.d/init.el",
		"npmrc":                  "/home/r/proj/.npmrc",
		"pip.conf":               "/home/r/.config/pip/pip.conf",
		"cargo":                  "/home/r/proj/.cargo/config.toml",
		"go.env":                 "/usr/local/go/go.env",
		"a .git file (gitdir:)":  "/home/r/proj/.git",
		".git/commondir":         "/home/r/proj/.git/commondir",
		"linked worktree":        "/home/r/proj/.git/worktrees/wt/config.worktree",
		"config.worktree":        "/home/r/proj/.git/config.worktree",
		"included git config":    "/home/r/.gitconfig.local",
		"separate git directory": "/home/r/store.git/config",
	}
	v := vaglio.New(vaglio.Options{Home: "/home/r"})
	t.Cleanup(func() { v.Close() })
	for adapter, raw := range writes {
		for kind, p := range kinds {
			t.Run(fmt.Sprintf("%s %s", adapter, kind), func(t *testing.T) {
				cs := mapRaw(t, adapter, raw(p), nil)
				found := false
				for _, c := range cs {
					if c.Capability != "fs:write" || c.Target != p {
						continue
					}
					found = true
					if reason, always := v.MustAsk(vaglio.Request{Capability: c.Capability, Target: c.Target}); !always {
						t.Errorf("fs:write %s: ask always false (%q)", p, reason)
					}
				}
				if !found {
					t.Errorf("no fs:write %s among %+v", p, cs)
				}
			})
		}
	}
	reads := map[string]func(p string) string{
		"claude-code": func(p string) string {
			return rawEvent("claude-code", "Read", "/home/r/proj", map[string]any{"file_path": p})
		},
		"gemini":   func(p string) string { return geminiEvent("read_file", map[string]any{"absolute_path": p}) },
		"qwen":     func(p string) string { return qwenEvent("PreToolUse", "read_file", map[string]any{"absolute_path": p}) },
		"copilot":  func(p string) string { return copilotPreEvent("view", map[string]any{"path": p}) },
		"opencode": func(p string) string { return openCodeEvent("read", map[string]any{"filePath": p}) },
		"cursor": func(p string) string {
			return rawEvent("cursor", "Read", "/home/r/proj", map[string]any{"target_file": p})
		},
		"codex": func(p string) string {
			return codexEvent("PreToolUse", "Bash", map[string]any{"command": "cat " + p})
		},
	}
	for adapter, raw := range reads {
		for _, p := range []string{"/etc/metnos/gateway.env", "/var/lib/private/metnos/gateway.db", "/var/lib/private/metnos/agent-token"} {
			cs := mapRaw(t, adapter, raw(p), nil)
			if len(cs) == 0 {
				t.Fatalf("%s: no call for %s", adapter, p)
			}
			for _, c := range cs {
				if blocked, _ := vaglio.Guard(vaglio.Request{Capability: c.Capability, Target: c.Target, Args: c.Args}, "/home/r"); !blocked {
					t.Errorf("%s %s %q not blocked", adapter, c.Capability, c.Target)
				}
			}
		}
	}
}
