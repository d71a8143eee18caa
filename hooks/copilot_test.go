package hooks_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

func copilotPreEvent(tool string, args map[string]any) string {
	return mustJSON(map[string]any{"sessionId": "s", "timestamp": 1, "cwd": "/home/r/proj", "toolName": tool, "toolArgs": args})
}

func TestCopilot_Map(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []target
	}{
		{"bash", copilotPreEvent("bash", map[string]any{"command": "npm test", "description": "d", "mode": "sync"}),
			[]target{{"code:exec", "npm test"}}},
		{"view", copilotPreEvent("view", map[string]any{"path": "~/.ssh/id_rsa"}), []target{{"fs:read", "~/.ssh/id_rsa"}}},
		{"create", copilotPreEvent("create", map[string]any{"path": "a.txt", "file_text": "x"}), []target{{"fs:write", "/home/r/proj/a.txt"}}},
		{"edit", copilotPreEvent("edit", map[string]any{"path": "/etc/hosts", "old_str": "a", "new_str": "b"}), []target{{"fs:write", "/etc/hosts"}}},
		{"grep", copilotPreEvent("grep", map[string]any{"pattern": "x", "paths": []any{"src", "/etc"}}),
			[]target{{"fs:read", "/home/r/proj/src"}, {"fs:read", "/etc"}}},
		{"glob", copilotPreEvent("glob", map[string]any{"pattern": "**/*.go"}), []target{{"fs:read", "/home/r/proj/**/*.go"}}},
		{"permissionRequest edit", mustJSON(map[string]any{"hookName": "permissionRequest", "sessionId": "s", "cwd": "/home/r/proj",
			"toolName": "edit", "toolInput": map[string]any{"file_path": "/home/r/proj/a.txt", "diff": "+x"}}),
			[]target{{"fs:write", "/home/r/proj/a.txt"}}},
		{"mcp", copilotPreEvent("github-list_issues", map[string]any{"repo": "x"}), []target{{"mail:read", "github-list_issues"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.Copilot, tc.raw, map[string]string{"github-list_issues": "mail:read"})
			checkCalls(t, cs, tc.want, "copilot-cli")
			for _, c := range cs {
				for _, k := range []string{"file_text", "diff", "old_str", "new_str"} {
					if v, ok := c.Args[k].(string); ok && !strings.Contains(v, "not sent") {
						t.Errorf("%s sent to the guard: %q", k, v)
					}
				}
			}
		})
	}
}

func TestCopilot_AnswersNeverAsk(t *testing.T) {
	pre, _ := hooks.Copilot.Decode([]byte(copilotPreEvent("bash", map[string]any{"command": "ls"})))
	perm, _ := hooks.Copilot.Decode([]byte(`{"hookName":"permissionRequest","sessionId":"s","toolName":"edit","toolInput":{"file_path":"/a"}}`))
	for _, v := range []hooks.Verdict{{hooks.Allow, "ok"}, {hooks.Deny, "no"}, {hooks.Ask, "nobody"}} {
		a := string(hooks.Copilot.Answer(pre, v).JSON())
		b := string(hooks.Copilot.Answer(perm, v).JSON())
		want := v.Decision
		if want == hooks.Ask {
			want = hooks.Deny
		}
		if !strings.Contains(a, `"permissionDecision":"`+want+`"`) || !strings.Contains(b, `"behavior":"`+want+`"`) {
			t.Errorf("%s: %s / %s", v.Decision, a, b)
		}
	}
	if _, err := hooks.Copilot.Decode([]byte(`{"hookName":"postToolUse","toolName":"bash"}`)); err == nil {
		t.Error("postToolUse decoded")
	}
}
