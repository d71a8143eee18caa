package hooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
)

// TestOpenCode drives the real OpenCode (`opencode run`) through the
// plugin `gateway hook opencode --plugin` prints, saved and configured as
// docs/agents.md says (with its air-gapped lock file), the stand-in as an
// OpenAI-compatible provider.
func TestOpenCode(t *testing.T) {
	bin := agenttest.Bin(t, "opencode")
	g := chatAgentGateway(t, "hooks.opencode")
	home := t.TempDir()
	plugin, err := exec.Command(g.Bin, "hook", "opencode", "--plugin").Output()
	if err != nil {
		t.Fatalf("gateway hook opencode --plugin: %v", err)
	}
	pluginPath := filepath.Join(home, ".local", "share", "gateway", "opencode-plugin.js")
	agenttest.WriteFile(t, pluginPath, string(plugin))
	cfg := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(cfg, "package-lock.json"),
		`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`+"\n")

	a := chatAgent{shell: "bash", read: "read", write: "write", pathArg: "filePath", textArg: "content"}
	a.run = func(t *testing.T, gatewayURL string, m *agenttest.Chat, slow, _ bool) (string, string) {
		dir, err := os.MkdirTemp(home, "proj-")
		if err != nil {
			t.Fatal(err)
		}
		prepare(t, a, dir, m)
		agenttest.WriteFile(t, filepath.Join(cfg, "opencode.json"), `{
  "plugin": ["file://`+pluginPath+`"],
  "permission": { "bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow" },
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake",
    "options": { "baseURL": "`+m.URL+`/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true } } } },
  "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled"
}
`)
		env := g.Env(home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_DATA_HOME="+home+"/.local/share",
			"XDG_CACHE_HOME="+home+"/.cache", "XDG_STATE_HOME="+home+"/.local/state", "OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
			"GATEWAY_URL="+gatewayURL)
		if slow {
			env = append(env, "GATEWAY_HOOK_WAIT=2s")
		}
		stdout, stderr, err := agenttest.Run(t, 150*time.Second, dir, env, bin, "run", "do the task")
		if err != nil {
			t.Logf("opencode: %v", err)
		}
		return dir, stdout + stderr
	}
	checkChatAgent(t, g, a)
}
