package hooks_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
)

func qwenEvent(event, tool string, input map[string]any) string {
	return mustJSON(map[string]any{"session_id": "s", "cwd": "/home/r/proj", "hook_event_name": event,
		"permission_mode": "yolo", "tool_name": tool, "tool_input": input, "tool_use_id": "toolu_1"})
}

func TestQwen_Map(t *testing.T) {
	cases := []struct {
		name string
		raw  string
		want []target
	}{
		{"shell in directory", qwenEvent("PreToolUse", "run_shell_command", map[string]any{"command": "cat a", "directory": "sub"}),
			[]target{{"code:exec", "cat a"}}},
		{"read_file", qwenEvent("PreToolUse", "read_file", map[string]any{"file_path": "/home/r/.ssh/id_rsa"}), []target{{"fs:read", "/home/r/.ssh/id_rsa"}}},
		{"read_many_files", qwenEvent("PreToolUse", "read_many_files", map[string]any{"paths": []any{"a.txt", "/etc/*"}}),
			[]target{{"fs:read", "/home/r/proj/a.txt"}, {"fs:read", "/etc/*"}}},
		{"glob", qwenEvent("PreToolUse", "glob", map[string]any{"pattern": "**/*.go", "path": "/src"}), []target{{"fs:read", "/src/**/*.go"}}},
		{"grep_search", qwenEvent("PreToolUse", "grep_search", map[string]any{"pattern": "\\.ssh"}), []target{{"fs:read", "/home/r/proj"}}},
		{"write_file", qwenEvent("PermissionRequest", "write_file", map[string]any{"file_path": "/home/r/proj/n.txt", "content": "x"}),
			[]target{{"fs:write", "/home/r/proj/n.txt"}}},
		{"edit", qwenEvent("PreToolUse", "edit", map[string]any{"file_path": "b.go", "old_string": "a", "new_string": "b"}),
			[]target{{"fs:write", "/home/r/proj/b.go"}}},
		{"notebook_edit", qwenEvent("PreToolUse", "notebook_edit", map[string]any{"notebook_path": "/n.ipynb", "new_source": "x"}),
			[]target{{"fs:write", "/n.ipynb"}}},
		{"web_fetch", qwenEvent("PreToolUse", "web_fetch", map[string]any{"url": "https://example.com/a?token=x", "prompt": "p"}),
			[]target{{"network:http", "example.com:443"}}},
		{"mcp", qwenEvent("PreToolUse", "mcp__gmail__send", map[string]any{"to": "a@b.c"}), []target{{"mail:send", "a@b.c"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs, _ := mapped(t, hooks.Qwen, tc.raw, map[string]string{"mcp__gmail__send": "mail:send"})
			checkCalls(t, cs, tc.want, "qwen-code")
		})
	}
	ev, _ := hooks.Qwen.Decode([]byte(qwenEvent("PreToolUse", "run_shell_command", map[string]any{"command": "ls", "directory": "sub"})))
	if cs, _ := hooks.Qwen.Map(ev, nil); !strings.Contains(cs[0].Summary, "/home/r/proj/sub") {
		t.Errorf("the card does not name the directory the command runs in: %q", cs[0].Summary)
	}
}

func TestQwen_AnswersNeverAsk(t *testing.T) {
	pre, _ := hooks.Qwen.Decode([]byte(qwenEvent("PreToolUse", "run_shell_command", map[string]any{"command": "ls"})))
	perm, _ := hooks.Qwen.Decode([]byte(qwenEvent("PermissionRequest", "run_shell_command", map[string]any{"command": "ls"})))
	for _, v := range []hooks.Verdict{{hooks.Allow, "ok"}, {hooks.Deny, "no"}, {hooks.Ask, "nobody"}} {
		want := v.Decision
		if want == hooks.Ask {
			want = hooks.Deny
		}
		r1, r2 := hooks.Qwen.Answer(pre, v), hooks.Qwen.Answer(perm, v)
		a, b := string(r1.JSON()), string(r2.JSON())
		if r1.Exit != 0 || r2.Exit != 0 || !strings.Contains(a, `"permissionDecision":"`+want+`"`) || !strings.Contains(b, `"behavior":"`+want+`"`) {
			t.Errorf("%s: %s / %s", v.Decision, a, b)
		}
	}
	if _, err := hooks.Qwen.Decode([]byte(qwenEvent("PostToolUse", "run_shell_command", nil))); err == nil {
		t.Error("PostToolUse decoded")
	}
}
