package hooks_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

// qwenHooks is the "hooks" of ~/.qwen/settings.json exactly as
// docs/agents.md gives it: both events, every tool, timeout 600 s.
const qwenHooks = `{
    "PreToolUse": [
      { "matcher": ".*", "hooks": [{ "type": "command", "command": "gateway hook qwen", "timeout": 600 }] }
    ],
    "PermissionRequest": [
      { "matcher": ".*", "hooks": [{ "type": "command", "command": "gateway hook qwen", "timeout": 600 }] }
    ]
  }`

// qwenSettings is the offline set-up (the stand-in as an OpenAI provider,
// no telemetry, no background memory agent) with hooks.
func qwenSettings(hooks string) string {
	return `{
  "security": { "auth": { "selectedType": "openai" } },
  "model": { "name": "fake-model" },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "general": { "enableAutoUpdate": false },
  "memory": { "enableManagedAutoMemory": false, "enableManagedAutoDream": false, "enableAutoSkill": false },
  "hooks": ` + hooks + `
}
`
}

// qwenRun runs the real Qwen Code once in home (a fresh HOME), which is also its
// workspace (so ~/.ssh is inside it: only the gateway stands between the
// model and the key), with the gateway at gatewayURL. sdk runs it in the
// stream-json SDK mode with its default approval mode (where
// PermissionRequest fires); otherwise headless `qwen -p --approval-mode
// yolo`, the set-up docs/agents.md gives for unattended runs.
func qwenRun(t *testing.T, g *agenttest.Gateway, home, gatewayURL string, m *agenttest.Chat, hooks string, sdk bool) string {
	t.Helper()
	qwen := agenttest.Bin(t, "qwen")
	agenttest.WriteFile(t, filepath.Join(home, ".qwen", "settings.json"), qwenSettings(hooks))
	agenttest.SSHKey(t, home)
	env := g.Env(home, "OPENAI_BASE_URL="+m.URL+"/v1", "OPENAI_API_KEY=x", "OPENAI_MODEL=fake-model",
		"QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "GATEWAY_URL="+gatewayURL,
		"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	args := []string{"-p", "do the task", "--approval-mode", "yolo"}
	stdin := ""
	if sdk {
		args = []string{"--input-format", "stream-json", "--output-format", "stream-json", "--approval-mode", "default"}
		stdin = `{"type":"user","message":{"role":"user","content":"do the task"}}` + "\n"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, qwen, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = home, env, strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Logf("qwen: %v", err)
	}
	return stdout.String() + stderr.String()
}

// TestQwenCode drives the real Qwen Code through `gateway hook qwen`,
// configured as docs/agents.md says.
func TestQwenCode(t *testing.T) {
	agenttest.Bin(t, "qwen")
	g := agenttest.StartGateway(t, `
[hooks.qwen]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)

	t.Run("approved command runs", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "run_shell_command", Input: map[string]any{
			"command": "printf gateway-%s approved", "description": "print"}})
		out := qwenRun(t, g, t.TempDir(), g.URL, m, qwenHooks, false)
		if !m.Saw("gateway-approved") {
			t.Fatalf("the approved command did not run:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		home := t.TempDir()
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "read_file", Input: map[string]any{
			"file_path": filepath.Join(home, ".ssh", "id_rsa")}})
		out := qwenRun(t, g, home, g.URL, m, qwenHooks, false)
		if m.Saw("agenttest-secret") || strings.Contains(out, "agenttest-secret") {
			t.Fatal("the key's content reached the model")
		}
		if !m.Saw("forbidden path .ssh") {
			t.Fatalf("the model was not told the guard refused it:\n%s", out)
		}
	})

	for _, tc := range []struct {
		decision string
		written  bool
	}{{client.AllowOnce, true}, {client.Deny, false}} {
		t.Run("write waits for a person: "+tc.decision, func(t *testing.T) {
			// The SDK mode: PermissionRequest asks, then PreToolUse is
			// answered from that request (no second card).
			home := t.TempDir()
			m := agenttest.NewChat(t, agenttest.ToolCall{Name: "write_file", Input: map[string]any{
				"file_path": filepath.Join(home, "notes.txt"), "content": "written after approval\n"}})
			decided := g.DecideNext(60*time.Second, tc.decision)
			out := qwenRun(t, g, home, g.URL, m, qwenHooks, true)
			e := <-decided
			if e.ID == "" {
				t.Fatalf("no request waited for a person:\n%s", out)
			}
			if e.Capability != "fs:write" || e.Target != filepath.Join(home, "notes.txt") {
				t.Errorf("asked about %s %s, want fs:write on notes.txt", e.Capability, e.Target)
			}
			if strings.Contains(e.CallID, "toolu_") {
				t.Errorf("the card came from PreToolUse (call_id %q), not from PermissionRequest", e.CallID)
			}
			if n := g.MorePending(); n != 0 {
				t.Errorf("%d more cards for the same write", n)
			}
			_, err := os.Stat(filepath.Join(home, "notes.txt"))
			if written := err == nil; written != tc.written {
				t.Fatalf("%s: file written = %v\n%s", tc.decision, written, out)
			}
			if !tc.written && !m.Saw("denied by") {
				t.Fatalf("the model was not told who denied it:\n%s", out)
			}
		})
	}

	t.Run("gateway that does not answer in time blocks", func(t *testing.T) {
		hung := make(chan struct{})
		silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hung }))
		defer silent.Close()
		defer close(hung)
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "run_shell_command", Input: map[string]any{
			"command": "printf gateway-%s approved > ran.txt", "description": "print"}})
		home := t.TempDir()
		out := qwenRun(t, g, home, silent.URL, m, strings.ReplaceAll(qwenHooks, "gateway hook qwen", "gateway hook qwen --wait 2s"), false)
		if _, err := os.Stat(filepath.Join(home, "ran.txt")); err == nil {
			t.Fatalf("the command ran although the gateway never answered:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}
