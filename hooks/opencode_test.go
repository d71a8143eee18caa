package hooks_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

func openCodeEvent(tool string, args map[string]any) string {
	return mustJSON(map[string]any{"hook_event_name": "tool.execute.before", "tool": tool, "sessionID": "ses_1",
		"callID": "call_1", "directory": "/home/r/proj", "args": args})
}

func TestOpenCode_Map(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []target
	}{
		{"bash in workdir", openCodeEvent("bash", map[string]any{"command": "cat a", "workdir": "sub"}), []target{{"code:exec", "cat a"}}},
		{"read", openCodeEvent("read", map[string]any{"filePath": "~/.ssh/id_rsa"}), []target{{"fs:read", "~/.ssh/id_rsa"}}},
		{"write", openCodeEvent("write", map[string]any{"filePath": "n.txt", "content": "x"}), []target{{"fs:write", "/home/r/proj/n.txt"}}},
		{"edit", openCodeEvent("edit", map[string]any{"filePath": "/etc/hosts", "oldString": "a", "newString": "b"}), []target{{"fs:write", "/etc/hosts"}}},
		{"glob", openCodeEvent("glob", map[string]any{"pattern": "**/*.pem"}), []target{{"fs:read", "/home/r/proj/**/*.pem"}}},
		{"grep", openCodeEvent("grep", map[string]any{"pattern": "key", "path": "/etc"}), []target{{"fs:read", "/etc"}}},
		{"webfetch", openCodeEvent("webfetch", map[string]any{"url": "https://example.com/x?t=secret", "format": "text"}), []target{{"network:http", "example.com:443"}}},
		{"mcp", openCodeEvent("gmail_send", map[string]any{"to": "a@b.c"}), []target{{"mail:send", "a@b.c"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.OpenCode, tc.raw, map[string]string{"gmail_send": "mail:send"})
			checkCalls(t, cs, tc.want, "opencode")
			for _, c := range cs {
				for _, k := range []string{"content", "oldString", "newString"} {
					if v, ok := c.Args[k].(string); ok && !strings.Contains(v, "not sent") {
						t.Errorf("%s sent to the guard: %q", k, v)
					}
				}
				if strings.Contains(mustJSON(c.Args), "secret") {
					t.Errorf("the URL's query reached the guard: %v", c.Args)
				}
			}
		})
	}
	ev, _ := hooks.OpenCode.Decode([]byte(openCodeEvent("bash", map[string]any{"command": "ls", "workdir": "sub"})))
	if cs, _ := hooks.OpenCode.Map(ev, nil); !strings.Contains(cs[0].Summary, "/home/r/proj/sub") {
		t.Errorf("the card does not name the directory the command runs in: %q", cs[0].Summary)
	}
	// A path in a field the tool does not read, naming another file, needs a person.
	cs, _ := mapped(t, hooks.OpenCode, openCodeEvent("read", map[string]any{"filePath": "a.txt", "path": "/etc/shadow"}), nil)
	if cs[0].Ask == "" {
		t.Error("two disagreeing paths not asked about")
	}
}

func TestOpenCode_AnswerAndPlugin(t *testing.T) {
	ev, _ := hooks.OpenCode.Decode([]byte(openCodeEvent("bash", map[string]any{"command": "ls"})))
	for _, v := range []hooks.Verdict{{hooks.Allow, "ok"}, {hooks.Deny, "no"}, {hooks.Ask, "nobody"}} {
		want := v.Decision
		if want == hooks.Ask {
			want = hooks.Deny
		}
		if a := string(hooks.OpenCode.Answer(ev, v).JSON()); !strings.Contains(a, `"decision":"`+want+`"`) {
			t.Errorf("%s: %s", v.Decision, a)
		}
	}
	if _, err := hooks.OpenCode.Decode([]byte(`{"hook_event_name":"tool.execute.after","tool":"bash"}`)); err == nil {
		t.Error("tool.execute.after decoded")
	}
	for _, s := range []string{"tool.execute.before", "/v1/hooks/opencode", "GATEWAY_URL", "GATEWAY_TOKEN", `answer.decision === "allow"`} {
		if !bytes.Contains(hooks.OpenCodePlugin, []byte(s)) {
			t.Errorf("the plugin lacks %q", s)
		}
	}
}
