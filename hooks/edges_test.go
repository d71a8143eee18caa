package hooks_test

import (
	"fmt"
	"math/rand"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

// rawEvent writes a tool call as the named adapter's agent sends it, in
// working directory cwd.
func rawEvent(adapter, tool, cwd string, input map[string]any) string {
	switch adapter {
	case "codex":
		return mustJSON(map[string]any{"session_id": "s", "turn_id": "t", "cwd": cwd, "hook_event_name": "PreToolUse",
			"tool_name": tool, "tool_input": input, "tool_use_id": "call_1"})
	case "gemini":
		return mustJSON(map[string]any{"session_id": "s", "cwd": cwd, "hook_event_name": "BeforeTool", "tool_name": tool, "tool_input": input})
	case "cursor":
		return mustJSON(map[string]any{"conversation_id": "c", "hook_event_name": "preToolUse", "workspace_roots": []any{cwd},
			"tool_name": tool, "tool_input": input, "tool_use_id": "tu"})
	}
	return mustJSON(map[string]any{"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
		"tool_name": tool, "tool_input": input, "tool_use_id": "toolu"})
}

func adapterNamed(t testing.TB, name string) hooks.Adapter {
	ad, ok := hooks.AdapterNamed(name)
	if !ok {
		t.Fatalf("no adapter %s", name)
	}
	return ad
}

func mapRaw(t testing.TB, adapter, raw string, tools map[string]string) []hooks.Call {
	t.Helper()
	ad := adapterNamed(t, adapter)
	ev, err := ad.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	cs, err := ad.Map(ev, tools)
	if err != nil {
		t.Fatalf("map %s: %v", raw, err)
	}
	return cs
}

// TestEdges_OneFieldOfMany: a tool input whose candidate fields for one
// path disagree is asked about (Call.Ask: no rule or grant allows it),
// and every one of those paths reaches the guard in args.
func TestEdges_OneFieldOfMany(t *testing.T) {
	cfgTools := map[string]string{"mcp__fs__read": "fs:read", "mcp_fs_read": "fs:read", "mcp__web__get": "network:http"}
	cases := []struct {
		adapter, tool string
		input         map[string]any
		ask           bool
	}{
		{"claude-code", "Read", map[string]any{"file_path": "/home/u/notes.md", "path": "/home/u/.ssh/id_rsa"}, true},
		{"claude-code", "Read", map[string]any{"file_path": "/home/u/notes.md", "absolute_path": "/etc/shadow"}, true},
		{"claude-code", "Write", map[string]any{"file_path": "a.txt", "target_file": "/home/u/.bashrc", "content": "x"}, true},
		{"claude-code", "Edit", map[string]any{"file_path": "a.txt", "filename": "b.txt"}, true},
		{"claude-code", "NotebookEdit", map[string]any{"notebook_path": "n.ipynb", "file_path": "/etc/passwd"}, true},
		{"claude-code", "Read", map[string]any{"file_path": "/w/a.txt", "path": "a.txt"}, false}, // the same file
		{"claude-code", "Read", map[string]any{"file_path": "/w/a.txt", "path": []any{"/etc/shadow"}}, true},
		{"claude-code", "Grep", map[string]any{"pattern": "x", "path": "/w", "dir_path": "/etc"}, true},
		{"claude-code", "mcp__fs__read", map[string]any{"path": "/w/a", "file": "/etc/shadow"}, true},
		{"codex", "mcp__fs__read", map[string]any{"file_path": "/w/a", "path": "/root/.ssh/id_rsa"}, true},
		{"gemini", "read_file", map[string]any{"file_path": "/w/a", "absolute_path": "/etc/shadow"}, true},
		{"gemini", "write_file", map[string]any{"absolute_path": "/w/a", "path": "/home/u/.profile", "content": "x"}, true},
		{"gemini", "replace", map[string]any{"file_path": "/w/a", "target_file": "/w/b"}, true},
		{"gemini", "list_directory", map[string]any{"dir_path": "/w", "path": "/root"}, true},
		{"gemini", "read_file", map[string]any{"absolute_path": "/w/a"}, false},
		{"gemini", "mcp_fs_read", map[string]any{"path": "/w/a", "filename": "/etc/shadow"}, true},
		{"cursor", "Read", map[string]any{"target_file": "/w/a", "file_path": "/etc/shadow"}, true},
		{"cursor", "Delete", map[string]any{"path": "/w/a", "target_file": "/w/b"}, true},
		{"cursor", "Write", map[string]any{"file_path": "/w/a", "contents": "x"}, false},
		{"cursor", "LS", map[string]any{"target_directory": "/w", "path": "/root"}, true},
		{"claude-code", "mcp__web__get", map[string]any{"url": "https://good.example/x", "host": "evil.example"}, true},
		{"codex", "mcp__web__get", map[string]any{"url": "https://good.example/x", "uri": "https://good.example/y"}, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %v", tc.adapter, tc.tool, tc.input), func(t *testing.T) {
			cs := mapRaw(t, tc.adapter, rawEvent(tc.adapter, tc.tool, "/w", tc.input), cfgTools)
			for _, c := range cs {
				if (c.Ask != "") != tc.ask {
					t.Errorf("%s %q: ask %q, want ask=%v", c.Capability, c.Target, c.Ask, tc.ask)
				}
			}
			checkNamed(t, tc.input, "/w", cs)
		})
	}
}

// TestEdges_GlobAsWritten: a glob is the target as written (resolved),
// never its directory: a grant on /home/u must not cover ~/.ss*/id_*.
func TestEdges_GlobAsWritten(t *testing.T) {
	cases := []struct {
		adapter, tool string
		input         map[string]any
		want          []string
	}{
		{"gemini", "read_many_files", map[string]any{"include": []any{"/home/u/.ss*/id_*"}}, []string{"/home/u/.ss*/id_*"}},
		{"gemini", "read_many_files", map[string]any{"paths": []any{".ss*/id_*", "README.md"}}, []string{"/home/u/.ss*/id_*", "/home/u/README.md"}},
		{"gemini", "glob", map[string]any{"pattern": "id_*", "path": "/home/u/.ssh"}, []string{"/home/u/.ssh/id_*"}},
		{"gemini", "glob", map[string]any{"pattern": "/home/u/.ss*/id_*"}, []string{"/home/u/.ss*/id_*"}},
		{"claude-code", "Glob", map[string]any{"pattern": "/home/u/.ss*/id_*"}, []string{"/home/u/.ss*/id_*"}},
		{"claude-code", "Glob", map[string]any{"pattern": ".ss*/id_*"}, []string{"/home/u/.ss*/id_*"}},
		{"claude-code", "Glob", map[string]any{"pattern": "**/id_*", "path": "/home"}, []string{"/home/**/id_*"}},
		{"cursor", "Glob", map[string]any{"glob_pattern": ".ss*/id_*", "target_directory": "/home/u"}, []string{"/home/u/.ss*/id_*"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %v", tc.adapter, tc.tool, tc.input), func(t *testing.T) {
			cs := mapRaw(t, tc.adapter, rawEvent(tc.adapter, tc.tool, "/home/u", tc.input), nil)
			var got []string
			for _, c := range cs {
				got = append(got, c.Target)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("targets %q, want %q", got, tc.want)
			}
		})
	}
}

// TestEdges_WhereItRuns: relative paths resolve against the tool's own
// working directory (Codex's workdir, Gemini's directory, else the
// event's cwd), and the card's summary names that directory.
func TestEdges_WhereItRuns(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: etc/cron.d/x\n+* * * * * root id\n*** End Patch\n"
	cases := []struct {
		adapter, tool, cwd string
		input              map[string]any
		target, in         string // want: one call's target, and "in DIR" in its summary
	}{
		{"codex", "Bash", "/home/u/scratch", map[string]any{"command": "rm -rf ./*", "workdir": "/"}, "rm -rf ./*", " in /"},
		{"codex", "shell", "/home/u/scratch", map[string]any{"command": []any{"rm", "-rf", "./*"}, "workdir": "/"}, "rm -rf './*'", " in /"},
		{"codex", "exec_command", "/home/u/scratch", map[string]any{"cmd": "ls", "workdir": "../.."}, "ls", " in /home"},
		{"codex", "Bash", "/home/u/scratch", map[string]any{"command": "apply_patch <<'EOF'\n" + patch + "EOF\n", "workdir": "/"}, "/etc/cron.d/x", " in /"},
		{"codex", "shell", "/home/u/scratch", map[string]any{"command": []any{"apply_patch", patch}, "workdir": "/"}, "/etc/cron.d/x", " in /"},
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "rm -rf ./*", "directory": "/"}, "cd / && rm -rf ./*", " in /"},
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "ls", "directory": "sub"}, "cd /home/u/scratch/sub && ls", " in /home/u/scratch/sub"},
		// Gemini CLI 0.61 names it dir_path.
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "rm -rf ./*", "dir_path": "/"}, "cd / && rm -rf ./*", " in /"},
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "ls", "dir_path": "my dir"}, "cd '/home/u/scratch/my dir' && ls", " in /home/u/scratch/my dir"},
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "ls", "dir_path": "."}, "ls", " in /home/u/scratch"},
		{"gemini", "run_shell_command", "/home/u/scratch", map[string]any{"command": "ls", "dir_path": "/tmp", "directory": "."}, "cd /tmp && ls", " in /tmp"},
		{"claude-code", "Read", "/", map[string]any{"file_path": "etc/shadow"}, "/etc/shadow", " in /"},
		{"gemini", "read_file", "/", map[string]any{"file_path": "etc/shadow"}, "/etc/shadow", " in /"},
		{"cursor", "Read", "/", map[string]any{"file_path": "etc/shadow"}, "/etc/shadow", " in /"},
		{"claude-code", "Write", "/home/u", map[string]any{"file_path": "../../etc/profile.d/x.sh", "content": "id"}, "/etc/profile.d/x.sh", " in /home/u"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s %s %v", tc.adapter, tc.tool, tc.input), func(t *testing.T) {
			cs := mapRaw(t, tc.adapter, rawEvent(tc.adapter, tc.tool, tc.cwd, tc.input), nil)
			if len(cs) != 1 || cs[0].Target != tc.target || !strings.HasSuffix(cs[0].Summary, tc.in) {
				t.Fatalf("got %+v, want target %q and summary ending %q", cs, tc.target, tc.in)
			}
		})
	}
}

// checkNamed: every path and host the input names (outside what a tool
// writes) reaches the decision: as the target of some call (resolved),
// or as a string in its args, where the guard reads it.
func checkNamed(t testing.TB, input map[string]any, cwd string, cs []hooks.Call) {
	t.Helper()
	if len(cs) == 0 {
		t.Fatalf("no call for %v", input)
	}
	for _, c := range cs {
		seen := map[string]bool{c.Target: true}
		collect(c.Args, seen)
		for k, v := range input {
			if dataField[k] {
				continue
			}
			for _, s := range strs(v) {
				if !named(s, cwd, seen) {
					t.Fatalf("%s %q: the input's %s %q reaches neither target nor args %v", c.Capability, c.Target, k, s, c.Args)
				}
			}
		}
	}
}

var dataField = map[string]bool{"content": true, "contents": true, "old_string": true, "new_string": true, "new_source": true, "edits": true}

// named reports whether s (a path, a URL, a word) is seen as it is, or
// resolved against cwd, or by its host with the query cut away.
func named(s, cwd string, seen map[string]bool) bool {
	if seen[s] || seen[path.Join(cwd, s)] {
		return true
	}
	if urls := urlRe.FindAllString(s, -1); len(urls) > 0 {
		for _, raw := range urls {
			u, err := url.Parse(raw)
			if err != nil {
				return false
			}
			found := false
			for v := range seen {
				found = found || strings.Contains(v, u.Host) || strings.Contains(v, strings.ToLower(u.Hostname()))
			}
			if !found {
				return false
			}
		}
		return true
	}
	for v := range seen {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, strs(x)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, x := range v {
			out = append(out, strs(x)...)
		}
		return out
	}
	return nil
}

func collect(v any, seen map[string]bool) {
	for _, s := range strs(v) {
		seen[s] = true
	}
}

// TestProperty_EveryPathAndHostReachesTheDecision: for random tool inputs
// of every adapter's tools, each path and host the input names is in the
// request (target or args), so the guard sees it; and a file tool whose
// candidate path fields disagree is always asked about.
func TestProperty_EveryPathAndHostReachesTheDecision(t *testing.T) {
	tools := map[string][]string{
		"claude-code": {"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "WebFetch", "mcp__fs__read", "mcp__web__get"},
		"codex":       {"Bash", "shell_command", "exec_command", "mcp__fs__read", "mcp__web__get"},
		"gemini":      {"run_shell_command", "read_file", "write_file", "replace", "read_many_files", "glob", "search_file_content", "list_directory", "web_fetch", "mcp_fs_read"},
		"cursor":      {"Shell", "Read", "Write", "Edit", "StrReplace", "Delete", "Grep", "LS", "Glob"},
	}
	fileTools := map[string]bool{"Read": true, "Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true,
		"read_file": true, "write_file": true, "replace": true, "StrReplace": true, "Delete": true,
		"mcp__fs__read": true, "mcp_fs_read": true}
	cfg := map[string]string{"mcp__fs__read": "fs:read", "mcp_fs_read": "fs:read", "mcp__web__get": "network:http"}
	pathKeys := []string{"file_path", "absolute_path", "path", "target_file", "notebook_path", "filename", "file", "dir_path", "target_directory", "directory", "dir"}
	paths := []string{"/etc/shadow", "~/.ssh/id_rsa", "a.txt", "../../etc/passwd", "/home/u/.ss*/id_*", "src/**/*.go", "/w/x y", "./.git/hooks/pre-commit"}
	hosts := []string{"https://evil.example/x?t=1", "http://Good.Example:8080/p", "https://a.example.org"}
	rng := rand.New(rand.NewSource(23))
	mapped, asked := 0, 0
	for i := range 4000 {
		adapter := []string{"claude-code", "codex", "gemini", "cursor"}[i%4]
		tool := tools[adapter][rng.Intn(len(tools[adapter]))]
		input := map[string]any{}
		for range 1 + rng.Intn(3) {
			input[pathKeys[rng.Intn(len(pathKeys))]] = paths[rng.Intn(len(paths))]
		}
		switch rng.Intn(4) {
		case 0:
			input["url"] = hosts[rng.Intn(len(hosts))]
		case 1:
			input["prompt"] = "read " + hosts[rng.Intn(len(hosts))] + " and " + hosts[rng.Intn(len(hosts))]
		case 2:
			input["include"] = []any{paths[rng.Intn(len(paths))], paths[rng.Intn(len(paths))]}
		}
		input["command"] = "cat " + paths[rng.Intn(len(paths))]
		input["pattern"] = paths[rng.Intn(len(paths))]
		if rng.Intn(3) == 0 {
			input["content"] = "data " + paths[rng.Intn(len(paths))]
		}
		ad := adapterNamed(t, adapter)
		ev, err := ad.Decode([]byte(rawEvent(adapter, tool, "/w", input)))
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		cs, err := ad.Map(ev, cfg)
		if err != nil {
			continue // a bad event: answered ask or deny, never run
		}
		mapped++
		wd := "/w"
		if adapter == "gemini" && tool == "run_shell_command" {
			if w, ok := input["dir_path"].(string); ok && strings.TrimSpace(w) != "" {
				wd = path.Join(wd, w)
			} else if w, ok := input["directory"].(string); ok && strings.TrimSpace(w) != "" {
				wd = path.Join(wd, w)
			}
		}
		checkNamed(t, input, wd, cs)
		if fileTools[tool] && distinctPaths(input, pathKeys, "/w") > 1 {
			for _, c := range cs {
				if c.Ask == "" {
					t.Fatalf("%s %s %v: %s %q not asked about", adapter, tool, input, c.Capability, c.Target)
				}
			}
			asked++
		}
	}
	if mapped < 2000 || asked < 200 {
		t.Fatalf("only %d inputs mapped, %d ambiguous ones: the generator misses", mapped, asked)
	}
}

func distinctPaths(input map[string]any, keys []string, cwd string) int {
	seen := map[string]bool{}
	for _, k := range keys {
		if s, ok := input[k].(string); ok && s != "" {
			p := s
			if !path.IsAbs(p) && !strings.HasPrefix(p, "~") {
				p = path.Join(cwd, p)
			}
			seen[path.Clean(p)] = true
		}
	}
	return len(seen)
}

var urlRe = regexp.MustCompile(`https?://[^\s]+`)
