package hooks_test

import (
	"bytes"
	"context"
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

// TestQwenCode drives the real Qwen Code through `gateway hook qwen`. Each
// run has a fresh HOME that is also its workspace. Headless runs are
// `qwen -p --approval-mode yolo`, the set-up docs/agents.md gives for
// unattended runs (PreToolUse gates every call); the write runs in the
// stream-json SDK mode with the default approval mode, where
// PermissionRequest asks and PreToolUse follows from it: one card.
func TestQwenCode(t *testing.T) {
	qwen := agenttest.Bin(t, "qwen")
	g := chatAgentGateway(t, "hooks.qwen")
	a := chatAgent{shell: "run_shell_command", read: "read_file", write: "write_file", pathArg: "file_path", textArg: "content"}
	a.writeCard = func(t *testing.T, e client.Event) {
		if strings.Contains(e.CallID, "toolu_") {
			t.Errorf("the card came from PreToolUse (call_id %q), not from PermissionRequest", e.CallID)
		}
	}
	a.run = func(t *testing.T, gatewayURL string, m *agenttest.Chat, slow, sdk bool) (string, string) {
		home := t.TempDir()
		hooks := qwenHooks
		if slow {
			hooks = strings.ReplaceAll(hooks, "gateway hook qwen", "gateway hook qwen --wait 2s")
		}
		agenttest.WriteFile(t, filepath.Join(home, ".qwen", "settings.json"), qwenSettings(hooks))
		prepare(t, a, home, m)
		env := g.Env(home, "OPENAI_BASE_URL="+m.URL+"/v1", "OPENAI_API_KEY=x", "OPENAI_MODEL=fake-model",
			"QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "GATEWAY_URL="+gatewayURL,
			"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		args, stdin := []string{"-p", "do the task", "--approval-mode", "yolo"}, ""
		if sdk {
			args = []string{"--input-format", "stream-json", "--output-format", "stream-json", "--approval-mode", "default"}
			stdin = `{"type":"user","message":{"role":"user","content":"do the task"}}` + "\n"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, qwen, args...)
		cmd.Dir, cmd.Env, cmd.Stdin = home, env, strings.NewReader(stdin)
		cmd.WaitDelay = 5 * time.Second
		reap := agenttest.Contain(cmd)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Logf("qwen: %v", err)
		}
		reap()
		return home, out.String()
	}
	checkChatAgent(t, g, a)
}
