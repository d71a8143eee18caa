package vaglio

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPersistencePoint_Kinds: every kind of place that runs code later,
// each named by its rule, in a home directory, a project and the system.
func TestPersistencePoint_Kinds(t *testing.T) {
	for _, tc := range []struct{ rule, path string }{
		{"shell start-up file", "~/.bash_aliases"},
		{"shell start-up file", "/home/u/.bash_logout"},
		{"shell start-up file", "/home/u/.zlogin"},
		{"shell start-up file", "~/.config/zsh/.zshrc"},
		{"shell start-up file", "~/.config/fish/conf.d/x.fish"},
		{"shell start-up file", "/etc/fish/config.fish"},
		{"shell start-up file", "~/.oh-my-zsh/custom/x.zsh"},
		{"Python start-up file", "~/.local/lib/python3.12/site-packages/evil.pth"},
		{"Python start-up file", "/srv/app/.venv/lib/python3.11/site-packages/_virtualenv.pth"},
		{"Python start-up file", "/usr/lib/python3/dist-packages/x.pth"},
		{"Python start-up file", "/srv/app/.venv/lib/python3.11/site-packages/sitecustomize.py"},
		{"Python start-up file", "~/.local/lib/python3.12/site-packages/usercustomize.py"},
		{"Python start-up file", "/etc/python3.11/sitecustomize.py"},
		{"systemd unit", "~/.local/share/systemd/user/x.service"},
		{"systemd unit", "/usr/local/lib/systemd/system/x.service"},
		{"systemd unit", "/etc/systemd/system/x.service"},
		{"systemd unit", "/etc/systemd/user/x.timer"},
		{"agent hook or settings", "/w/.opencode/plugin/x.ts"},
		{"agent hook or settings", "~/.config/opencode/plugin/x.js"},
		{"agent hook or settings", "/w/opencode.json"},
		{"agent hook or settings", "/w/.claude/settings.json"},
		{"agent hook or settings", "/w/.claude/settings.local.json"},
		{"agent hook or settings", "~/.claude/settings.json"},
		{"agent hook or settings", "~/.claude.json"},
		{"agent hook or settings", "/w/.mcp.json"},
		{"agent hook or settings", "~/.codex/config.toml"},
		{"agent hook or settings", "/w/.codex/config.toml"},
		{"agent hook or settings", "/w/.gemini/settings.json"},
		{"agent hook or settings", "~/.qwen/settings.json"},
		{"agent hook or settings", "/w/.cursor/hooks.json"},
		{"agent hook or settings", "/w/.github/copilot/settings.json"},
		{"agent hook or settings", "/w/.github/hooks/gateway.json"},
		{"agent hook or settings", "~/.copilot/config.json"},
		{"agent hook or settings", "/w/.vscode/tasks.json"},
		{"editor start-up file", "~/.vimrc"},
		{"editor start-up file", "~/_vimrc"},
		{"editor start-up file", "/w/.exrc"},
		{"editor start-up file", "~/.vim/plugin/x.vim"},
		{"editor start-up file", "~/.config/nvim/init.lua"},
		{"editor start-up file", "~/.emacs.d/init.el"},
		{"editor start-up file", "~/.emacs"},
		{"editor start-up file", "~/.gdbinit"},
		{"editor start-up file", "/etc/vim/vimrc.local"},
		{"package-manager config", "~/.npmrc"},
		{"package-manager config", "/w/.npmrc"},
		{"package-manager config", "/w/.yarnrc.yml"},
		{"package-manager config", "~/.config/pip/pip.conf"},
		{"package-manager config", "/etc/pip.conf"},
		{"package-manager config", "/w/.venv/pip.conf"},
		{"package-manager config", "~/.cargo/config.toml"},
		{"package-manager config", "/w/.cargo/config"},
		{"package-manager config", "/usr/local/go/go.env"},
		{"package-manager config", "~/.config/go/env"},
		{"git config", "/w/.git"},
		{"git config", "~/.gitconfig"},
		{"git config", "~/.gitconfig.local"},
		{"git config", "/w/work.gitconfig"},
		{".git/config", "/w/.git/config"},
		{".git/config", "/w/.git/config.worktree"},
		{".git/config", "/w/.git/commondir"},
		{".git/config", "/w/.git/worktrees/feature/config.worktree"},
		{".git/config", "/w/.git/worktrees/feature/commondir"},
		{".git/config", "/w/.git/modules/sub/config"},
		{".git/config", "/srv/store.git/config"},
		{".git/hooks/", "/srv/store.git/hooks/pre-commit"},
	} {
		rule, hit := PersistencePoint(tc.path)
		if !hit || rule != tc.rule {
			t.Errorf("PersistencePoint(%q) = %q, %v; want %q", tc.path, rule, hit, tc.rule)
		}
	}
	for _, p := range []string{"/w/src/site.py", "/w/notes.pth", "/w/.claude/agents/x.md", "/w/.github/workflows/ci.yml",
		"/w/vimrc.md", "/w/.git/HEAD", "/w/.git/objects/ab/cd", "/w/src/config.go", "/w/docs/npmrc.md", "/w/.gitignore"} {
		if rule, hit := PersistencePoint(p); hit {
			t.Errorf("PersistencePoint(%q) = %s, want none", p, rule)
		}
	}
}

// TestGuard_GatewayUnitFiles: the shipped unit's env file of secrets and
// its state under DynamicUser are forbidden like the database.
func TestGuard_GatewayUnitFiles(t *testing.T) {
	for _, p := range []string{"/etc/metnos/gateway.env", "/etc/metnos/gateway.toml", "/var/lib/private/metnos/gateway.db",
		"/var/lib/private/metnos/agent-token", "/var/lib/metnos/gateway.db-wal", "/var/log/private/metnos/2026-11.jsonl"} {
		for _, capability := range []string{"fs:read", "fs:write"} {
			if b, _ := Guard(Request{Capability: capability, Target: p}, testHome); !b {
				t.Errorf("%s %q not blocked", capability, p)
			}
		}
		if b, _ := Guard(Request{Capability: "code:exec", Target: "cat " + p}, testHome); !b {
			t.Errorf("cat %q not blocked", p)
		}
	}
}

// TestPersistencePoint_GitReadsIt runs the real git: each place a row
// writes is one git reads its config from (a setting written there is
// what `git config` answers), and writing it is a persistence point.
func TestPersistencePoint_GitReadsIt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed: the git config rows are not run")
	}
	for _, tc := range []struct {
		name string
		// setup builds a repository in dir and returns the file that
		// holds the setting (relative to dir) and where to run git.
		setup func(t *testing.T, dir string) (written, run string)
	}{
		{".git/config", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			return "repo/.git/config", "repo"
		}},
		{".git is a file (gitdir:)", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "--separate-git-dir", filepath.Join(dir, "store.git"), "repo")
			if b, _ := os.ReadFile(filepath.Join(dir, "repo/.git")); !strings.HasPrefix(string(b), "gitdir:") {
				t.Fatalf("repo/.git is not a gitdir: file: %q", b)
			}
			return "store.git/config", "repo"
		}},
		{"the .git file itself", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, dir, "init", "-q", "--bare", "other.git")
			if err := os.Rename(filepath.Join(dir, "repo/.git"), filepath.Join(dir, "repo/.git.moved")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "repo/.git"), "gitdir: "+filepath.Join(dir, "other.git")+"\n")
			if _, hit := PersistencePoint(filepath.Join(dir, "repo/.git")); !hit {
				t.Errorf("writing a .git file (gitdir:) is not a persistence point")
			}
			return "other.git/config", "repo"
		}},
		{".git/commondir", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, dir, "init", "-q", "--bare", "common.git")
			writeFile(t, filepath.Join(dir, "repo/.git/commondir"), filepath.Join(dir, "common.git")+"\n")
			return "common.git/config", "repo"
		}},
		{".git/config.worktree", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "config", "extensions.worktreeConfig", "true")
			return "repo/.git/config.worktree", "repo"
		}},
		{".git/worktrees/*/config.worktree", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "commit", "-q", "--allow-empty", "-m", "x")
			gitIn(t, filepath.Join(dir, "repo"), "worktree", "add", "-q", filepath.Join(dir, "wt"))
			gitIn(t, filepath.Join(dir, "repo"), "config", "extensions.worktreeConfig", "true")
			return "repo/.git/worktrees/wt/config.worktree", "wt"
		}},
		{".git/worktrees/*/commondir", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "commit", "-q", "--allow-empty", "-m", "x")
			gitIn(t, filepath.Join(dir, "repo"), "worktree", "add", "-q", filepath.Join(dir, "wt"))
			gitIn(t, dir, "init", "-q", "--bare", "common.git")
			writeFile(t, filepath.Join(dir, "repo/.git/worktrees/wt/commondir"), filepath.Join(dir, "common.git")+"\n")
			return "common.git/config", "wt"
		}},
		{"include.path", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "config", "include.path", "../.gitconfig.local")
			return "repo/.gitconfig.local", "repo"
		}},
		{"includeIf", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "config", "includeIf.gitdir:"+dir+"/.path", filepath.Join(dir, "work.gitconfig"))
			return "work.gitconfig", "repo"
		}},
		{"global include", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "repo")
			writeFile(t, filepath.Join(dir, "home/.gitconfig"), "[include]\n\tpath = ~/.gitconfig-work\n")
			return "home/.gitconfig-work", "repo"
		}},
		{"a submodule's git directory", func(t *testing.T, dir string) (string, string) {
			gitIn(t, dir, "init", "-q", "sub")
			gitIn(t, filepath.Join(dir, "sub"), "commit", "-q", "--allow-empty", "-m", "x")
			gitIn(t, dir, "init", "-q", "repo")
			gitIn(t, filepath.Join(dir, "repo"), "-c", "protocol.file.allow=always", "submodule", "add", "-q", filepath.Join(dir, "sub"), "s")
			return "repo/.git/modules/s/config", "repo/s"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "home"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("HOME", filepath.Join(dir, "home"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "home/.config"))
			t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			for _, k := range []string{"GIT_CONFIG_GLOBAL", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_COUNT"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			t.Setenv("GIT_AUTHOR_NAME", "t")
			t.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
			t.Setenv("GIT_COMMITTER_NAME", "t")
			t.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
			written, run := tc.setup(t, dir)
			f := filepath.Join(dir, written)
			b, _ := os.ReadFile(f)
			writeFile(t, f, string(b)+"[gatewaytest]\n\tmark = written-here\n")
			if got := strings.TrimSpace(gitIn(t, filepath.Join(dir, run), "config", "--get", "gatewaytest.mark")); got != "written-here" {
				t.Fatalf("git in %s does not read %s: %q", run, written, got)
			}
			if rule, hit := PersistencePoint(f); !hit {
				t.Errorf("git reads its config from %s, but PersistencePoint(%q) = false", written, f)
			} else {
				t.Logf("%s: %s", written, rule)
			}
		})
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPersistencePoint_PythonStartUp: Python imports sitecustomize and
// usercustomize from its site directories, not from the folder of the
// script it runs nor the one it runs in, so only the former are
// persistence points and a write to "folder/*" can still be granted.
func TestPersistencePoint_PythonStartUp(t *testing.T) {
	for _, p := range []string{"/home/roberto/inv/sitecustomize.py", "/srv/app/usercustomize.py"} {
		if rule, ok := PersistencePoint(p); ok {
			t.Errorf("%s: a persistence point (%s), though Python never imports it from there", p, rule)
		}
	}
	for _, p := range []string{"/usr/lib/python3/dist-packages/sitecustomize.py", "/srv/app/.venv/lib/python3.11/site-packages/usercustomize.pyc"} {
		if _, ok := PersistencePoint(p); !ok {
			t.Errorf("%s: not a persistence point", p)
		}
	}
	// A folder's glob could name opencode.json or a .pth file, so writing
	// it asks every time; a grant on it is still offered, since every
	// such write it could match asks anyway.
	for p, want := range map[string]bool{"/home/roberto/inv/*": false, "/home/u/.git/hooks/*": true,
		"~/.config/systemd/user/*.service": true, "/*": false} {
		if rule, ok := PersistenceWithin(p); ok != want {
			t.Errorf("PersistenceWithin(%s) = %v (%s), want %v", p, ok, rule, want)
		}
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the import check did not run")
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"sitecustomize.py": "print('SITECUSTOMIZE')\n", "usercustomize.py": "print('USERCUSTOMIZE')\n", "main.py": "print('main')\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{filepath.Join(dir, "main.py")}, {"-c", "print('main')"}, {"-m", "main"}} {
		cmd := exec.Command(python, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PYTHONPATH=", "PYTHONSTARTUP=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3 %v: %v: %s", args, err, out)
		}
		if strings.Contains(string(out), "CUSTOMIZE") {
			t.Errorf("python3 %v in the folder imported its customize file: %s", args, out)
		}
	}
}
