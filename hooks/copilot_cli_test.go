package hooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/hooks/agenttest"
)

// copilotSettings is $COPILOT_HOME/settings.json exactly as docs/agents.md
// gives it: both hooks, each `gateway hook copilot`, timeoutSec 600.
const copilotSettings = `{
  "hooks": {
    "preToolUse": [
      { "type": "command", "bash": "gateway hook copilot", "timeoutSec": 600 }
    ],
    "permissionRequest": [
      { "type": "command", "bash": "gateway hook copilot", "timeoutSec": 600 }
    ]
  }
}
`

// TestCopilotCLI drives the real GitHub Copilot CLI (`copilot -p`, its
// bring-your-own-model settings pointed at the stand-in) through `gateway
// hook copilot`. A file write fires preToolUse and then
// permissionRequest: one card.
func TestCopilotCLI(t *testing.T) {
	bin := agenttest.Bin(t, "copilot")
	g := chatAgentGateway(t, "hooks.copilot")
	home := t.TempDir() // one for all runs: Copilot unpacks itself into ~/.cache at its first
	a := chatAgent{shell: "bash", read: "view", write: "create", pathArg: "path", textArg: "file_text"}
	a.run = func(t *testing.T, gatewayURL string, m *agenttest.Chat, slow, _ bool) (string, string) {
		settings := copilotSettings
		if slow {
			settings = strings.ReplaceAll(settings, "gateway hook copilot", "gateway hook copilot --wait 2s")
		}
		agenttest.WriteFile(t, filepath.Join(home, ".copilot", "settings.json"), settings)
		dir, err := os.MkdirTemp(home, "proj-")
		if err != nil {
			t.Fatal(err)
		}
		prepare(t, a, dir, m)
		env := g.Env(home, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+m.URL+"/v1",
			"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=fake-model", "COPILOT_AUTO_UPDATE=false",
			"COPILOT_HOME="+filepath.Join(home, ".copilot"), "GATEWAY_URL="+gatewayURL,
			"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		stdout, stderr, err := agenttest.Run(t, 120*time.Second, dir, env, bin, "-p", "do the task")
		if err != nil {
			t.Logf("copilot: %v", err)
		}
		return dir, stdout + stderr
	}
	checkChatAgent(t, g, a)
}
