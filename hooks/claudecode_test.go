package hooks_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks"
)

func event(tool string, input map[string]any) hooks.Event {
	return hooks.Event{SessionID: "s1", Cwd: "/home/r/proj", HookEventName: "PreToolUse",
		ToolName: tool, ToolInput: input, ToolUseID: "toolu_01"}
}

func TestMap(t *testing.T) {
	tools := map[string]string{
		"mcp__gmail__send":  "mail:send",
		"mcp__fs__*":        "fs:read",
		"mcp__fs__write*":   "fs:write",
		"mcp__web__get":     "network:http",
		"mcp__clock__now":   "time:read",
		"mcp__slack__post":  "channel:out",
		"mcp__shell__plain": "code:exec",
	}
	cases := []struct {
		name       string
		ev         hooks.Event
		capability string
		target     string
		argKeys    []string
	}{
		{"Bash", event("Bash", map[string]any{"command": "npm install", "description": "Install dependencies"}),
			"code:exec", "npm install", []string{"command", "description"}},
		{"Write", event("Write", map[string]any{"file_path": "/home/r/proj/a.go", "content": "package a // ~/.ssh"}),
			"fs:write", "/home/r/proj/a.go", []string{"content", "file_path"}},
		{"Write relative", event("Write", map[string]any{"file_path": "src/../b.go", "content": "x"}),
			"fs:write", "/home/r/proj/b.go", []string{"content", "file_path"}},
		{"Edit", event("Edit", map[string]any{"file_path": "/home/r/proj/a.go", "old_string": "a", "new_string": "b"}),
			"fs:write", "/home/r/proj/a.go", []string{"file_path", "new_string", "old_string"}},
		{"MultiEdit", event("MultiEdit", map[string]any{"file_path": "/x/y.go", "edits": []any{}}),
			"fs:write", "/x/y.go", []string{"edits", "file_path"}},
		{"NotebookEdit", event("NotebookEdit", map[string]any{"notebook_path": "/x/n.ipynb", "new_source": "1"}),
			"fs:write", "/x/n.ipynb", []string{"new_source", "notebook_path"}},
		{"Read", event("Read", map[string]any{"file_path": "/home/r/.ssh/id_rsa"}),
			"fs:read", "/home/r/.ssh/id_rsa", []string{"file_path"}},
		{"Read tilde", event("Read", map[string]any{"file_path": "~/.ssh/id_rsa"}),
			"fs:read", "~/.ssh/id_rsa", []string{"file_path"}},
		{"Glob relative pattern", event("Glob", map[string]any{"pattern": "src/**/*.go"}),
			"fs:read", "/home/r/proj/src/**/*.go", []string{"pattern"}},
		{"Glob bare pattern", event("Glob", map[string]any{"pattern": "**/*.go"}),
			"fs:read", "/home/r/proj/**/*.go", []string{"pattern"}},
		{"Glob with path", event("Glob", map[string]any{"pattern": "*.md", "path": "/srv/docs"}),
			"fs:read", "/srv/docs/*.md", []string{"path", "pattern"}},
		{"Glob absolute pattern", event("Glob", map[string]any{"pattern": "/etc/*.conf"}),
			"fs:read", "/etc/*.conf", []string{"pattern"}},
		{"Grep no path", event("Grep", map[string]any{"pattern": `\.ssh`}),
			"fs:read", "/home/r/proj", []string{"pattern"}},
		{"Grep path", event("Grep", map[string]any{"pattern": "TODO", "path": "internal", "glob": "*.go"}),
			"fs:read", "/home/r/proj/internal", []string{"glob", "path", "pattern"}},
		{"WebFetch", event("WebFetch", map[string]any{"url": "https://Docs.Example.com:8443/a?token=s3cret", "prompt": "sum"}),
			"network:http", "docs.example.com:8443", []string{"prompt", "url"}},
		{"mcp exact", event("mcp__gmail__send", map[string]any{"to": []any{"a@x.org", "b@x.org"}, "body": "hi"}),
			"mail:send", "a@x.org, b@x.org", []string{"body", "to"}},
		{"mcp glob", event("mcp__fs__read_file", map[string]any{"path": "notes.txt"}),
			"fs:read", "/home/r/proj/notes.txt", []string{"path"}},
		{"mcp longest glob wins", event("mcp__fs__write_file", map[string]any{"path": "/tmp/o"}),
			"fs:write", "/tmp/o", []string{"path"}},
		{"mcp host", event("mcp__web__get", map[string]any{"url": "https://api.github.com/x"}),
			"network:http", "api.github.com:443", []string{"url"}},
		{"mcp none", event("mcp__clock__now", map[string]any{}),
			"time:read", "", []string{}},
		{"mcp exact fallback to tool name", event("mcp__slack__post", map[string]any{"text": "hi"}),
			"channel:out", "mcp__slack__post", []string{"text"}},
		{"mcp exec", event("mcp__shell__plain", map[string]any{"command": "ls"}),
			"code:exec", "ls", []string{"command"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := hooks.Map(tc.ev, tools)
			if err != nil {
				t.Fatalf("Map: %v", err)
			}
			if c.Capability != tc.capability || c.Target != tc.target {
				t.Errorf("got %s %q, want %s %q", c.Capability, c.Target, tc.capability, tc.target)
			}
			if c.CallID != "toolu_01" || c.Executor != "claude-code" {
				t.Errorf("call_id %q executor %q", c.CallID, c.Executor)
			}
			if !strings.Contains(c.Summary, tc.ev.ToolName) || c.Intent == "" {
				t.Errorf("summary %q intent %q", c.Summary, c.Intent)
			}
			var keys []string
			for k := range c.Args {
				keys = append(keys, k)
			}
			if strings.Join(sorted(keys), ",") != strings.Join(tc.argKeys, ",") {
				t.Errorf("arg keys %v, want %v", sorted(keys), tc.argKeys)
			}
		})
	}
}

func sorted(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

func TestMap_BashIntentIsDescription(t *testing.T) {
	c, err := hooks.Map(event("Bash", map[string]any{"command": "npm install", "description": "Install deps"}), nil)
	if err != nil || c.Intent != "Install deps" {
		t.Fatalf("intent %q, err %v", c.Intent, err)
	}
	c, _ = hooks.Map(event("Bash", map[string]any{"command": "ls"}), nil)
	if c.Intent != "Bash ls" {
		t.Fatalf("intent without description: %q", c.Intent)
	}
}

func TestMap_WebFetchIntentDropsQuery(t *testing.T) {
	c, err := hooks.Map(event("WebFetch", map[string]any{"url": "https://u:p@x.org/a?token=s3cret#f"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Intent, "s3cret") || strings.Contains(c.Intent, "u:p") || !strings.Contains(c.Intent, "x.org/a") {
		t.Fatalf("intent %q", c.Intent)
	}
}

func TestMap_ConfigOverridesBuiltin(t *testing.T) {
	c, err := hooks.Map(event("WebFetch", map[string]any{"url": "https://x.org"}), map[string]string{"WebFetch": "llm:online"})
	if err != nil || c.Capability != "llm:online" || c.Target != "" {
		t.Fatalf("got %+v, %v", c, err)
	}
	// A glob never overrides a built-in tool.
	c, err = hooks.Map(event("Read", map[string]any{"file_path": "/a"}), map[string]string{"*": "time:read"})
	if err != nil || c.Capability != "fs:read" {
		t.Fatalf("got %+v, %v", c, err)
	}
}

func TestMap_Unknown(t *testing.T) {
	for _, tool := range []string{"mcp__github__create_issue", "TodoWrite", "WebSearch"} {
		_, err := hooks.Map(event(tool, map[string]any{"x": "y"}), map[string]string{"mcp__gmail__send": "mail:send"})
		var ut *hooks.UnknownToolError
		if !errors.As(err, &ut) || ut.Tool != tool {
			t.Errorf("%s: err %v, want UnknownToolError", tool, err)
		}
	}
}

func TestMap_BadInput(t *testing.T) {
	cases := map[string]hooks.Event{
		"Bash without command":   event("Bash", map[string]any{"description": "x"}),
		"Write without path":     event("Write", map[string]any{"content": "x"}),
		"Read with a number":     event("Read", map[string]any{"file_path": 3}),
		"WebFetch without url":   event("WebFetch", map[string]any{}),
		"WebFetch without host":  event("WebFetch", map[string]any{"url": "file:///etc/passwd"}),
		"mcp host without url":   event("mcp__web__get", map[string]any{"q": "x"}),
		"Grep without path, cwd": {ToolName: "Grep", ToolInput: map[string]any{"pattern": "x"}},
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := hooks.Map(ev, map[string]string{"mcp__web__get": "network:http"})
			if !errors.Is(err, hooks.ErrBadEvent) {
				t.Fatalf("err %v, want ErrBadEvent", err)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	ev, err := hooks.Decode(strings.NewReader(`{"session_id":"s","transcript_path":"/t","cwd":"/p","permission_mode":"default",
		"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_9","new_field":1}`))
	if err != nil || ev.ToolName != "Bash" || ev.ToolUseID != "toolu_9" || ev.Cwd != "/p" {
		t.Fatalf("got %+v, %v", ev, err)
	}
	for name, in := range map[string]string{
		"not json":      `{`,
		"other event":   `{"hook_event_name":"PostToolUse","tool_name":"Bash"}`,
		"no tool":       `{"hook_event_name":"PreToolUse"}`,
		"too big":       `{"tool_name":"Write","tool_input":{"content":"` + strings.Repeat("x", hooks.MaxEventBytes) + `"}}`,
		"empty":         ``,
		"wrong type":    `{"tool_name":3}`,
		"array":         `[]`,
		"trailing junk": `{"tool_name":"Bash"} {`,
	} {
		if _, err := hooks.Decode(strings.NewReader(in)); !errors.Is(err, hooks.ErrBadEvent) {
			t.Errorf("%s: err %v, want ErrBadEvent", name, err)
		}
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		r        hooks.Result
		decision string
		reason   []string
	}{
		{"allowed by person", hooks.Result{ID: "r1", Status: "allowed", Decision: "allow_once", DecidedBy: "telegram:Roberto (42)"},
			hooks.Allow, []string{"allowed once by telegram:Roberto (42)"}},
		{"allowed always", hooks.Result{ID: "r1", Status: "allowed", Decision: "allow_always", DecidedBy: "web:owner"},
			hooks.Allow, []string{"allowed always by web:owner"}},
		{"allowed for a time", hooks.Result{ID: "r1", Status: "allowed", Decision: "allow_for", DecidedBy: "web:owner"},
			hooks.Allow, []string{"allowed for a limited time by web:owner"}},
		{"allowed for the session", hooks.Result{ID: "r1", Status: "allowed", Decision: "allow_session", DecidedBy: "web:owner"},
			hooks.Allow, []string{"allowed for this session by web:owner"}},
		{"allowed by policy", hooks.Result{ID: "r1", Status: "allowed", Reason: "approved by rule #1"},
			hooks.Allow, []string{"allowed by policy (approved by rule #1)"}},
		{"denied by person with note", hooks.Result{ID: "r1", Status: "denied", Decision: "deny", DecidedBy: "web:owner", Note: "use pnpm"},
			hooks.Deny, []string{"denied by web:owner", "Note from the owner: use pnpm", "Do not retry"}},
		{"denied by guard", hooks.Result{ID: "r1", Status: "denied", BlockedBy: "guard", Reason: "vaglio guard: guard: forbidden path .ssh in target"},
			hooks.Deny, []string{"denied by the guard: forbidden path .ssh in target"}},
		{"denied by policy", hooks.Result{ID: "r1", Status: "denied", BlockedBy: "policy", Reason: "fs:write is denied at autonomy ReadOnly"},
			hooks.Deny, []string{"fs:write is denied at autonomy ReadOnly"}},
		{"expired", hooks.Result{ID: "r1", Status: "expired"}, hooks.Ask, []string{"r1 expired"}},
		{"cancelled", hooks.Result{ID: "r1", Status: "cancelled"}, hooks.Ask, []string{"withdrawn"}},
		{"pending", hooks.Result{ID: "r1", Status: "pending"}, hooks.Ask, []string{"still pending"}},
		{"garbage status", hooks.Result{ID: "r1", Status: "weird"}, hooks.Ask, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := hooks.Decide(tc.r)
			if out.Decision() != tc.decision {
				t.Fatalf("decision %q, want %q", out.Decision(), tc.decision)
			}
			for _, want := range tc.reason {
				if !strings.Contains(out.Reason(), want) {
					t.Errorf("reason %q lacks %q", out.Reason(), want)
				}
			}
		})
	}
}

func TestOutputJSON(t *testing.T) {
	b, err := json.Marshal(hooks.Answer(hooks.Deny, "no"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestUnmappedAndFailed(t *testing.T) {
	ut := &hooks.UnknownToolError{Tool: "mcp__x__y"}
	if d := hooks.Unmapped(ut, "ask").Decision(); d != hooks.Ask {
		t.Errorf("unknown_tool ask: %s", d)
	}
	if d := hooks.Unmapped(ut, "deny").Decision(); d != hooks.Deny {
		t.Errorf("unknown_tool deny: %s", d)
	}
	// A bad event is never denied by unknown_tool = deny: it is not an unknown tool.
	if d := hooks.Unmapped(hooks.ErrBadEvent, "deny").Decision(); d != hooks.Ask {
		t.Errorf("bad event: %s", d)
	}
	out := hooks.Failed(errors.New("dial tcp 127.0.0.1:1:\n connection refused"))
	if out.Decision() != hooks.Ask || strings.Contains(out.Reason(), "\n") {
		t.Errorf("failed: %+v", out)
	}
	out = hooks.NoAnswer("r1", 9*time.Minute, true)
	if out.Decision() != hooks.Ask || !strings.Contains(out.Reason(), "9m0s") || !strings.Contains(out.Reason(), "withdrawn") {
		t.Errorf("no answer: %+v", out)
	}
}

// FuzzMap: no event makes Map panic, and every mapped call names a
// capability; nothing maps to a decision without asking the gateway.
func FuzzMap(f *testing.F) {
	f.Add(`{"tool_name":"Bash","tool_input":{"command":"ls"},"cwd":"/p"}`)
	f.Add(`{"tool_name":"Glob","tool_input":{"pattern":"/[a-"},"cwd":""}`)
	f.Add(`{"tool_name":"WebFetch","tool_input":{"url":"http://[::1"}}`)
	f.Add(`{"tool_name":"mcp__a__b","tool_input":{"to":[1,"x",null]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		ev, err := hooks.Decode(strings.NewReader(in))
		if err != nil {
			return
		}
		c, err := hooks.Map(ev, map[string]string{"mcp__a__*": "mail:send", "mcp__h__*": "network:http"})
		if err == nil && c.Capability == "" {
			t.Fatalf("mapped without a capability: %+v", c)
		}
	})
}
