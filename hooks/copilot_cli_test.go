package hooks_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
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

// copilot runs the real Copilot CLI (`copilot -p`, its bring-your-own-model
// settings pointed at a Chat stand-in) in one HOME per test: the CLI
// unpacks itself into ~/.cache on its first launch.
type copilot struct {
	bin, home string
	g         *agenttest.Gateway
}

func newCopilot(t *testing.T, g *agenttest.Gateway, settings string) *copilot {
	t.Helper()
	c := &copilot{bin: agenttest.Bin(t, "copilot"), home: t.TempDir(), g: g}
	agenttest.WriteFile(t, filepath.Join(c.home, ".copilot", "settings.json"), settings)
	agenttest.SSHKey(t, c.home)
	return c
}

// run asks the model (scripted to make one call) in a fresh project
// directory, with the gateway at gatewayURL, and returns that directory
// and what Copilot printed.
func (c *copilot) run(t *testing.T, gatewayURL string, m *agenttest.Chat) (proj, out string) {
	t.Helper()
	proj, err := os.MkdirTemp(c.home, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	env := c.g.Env(c.home, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+m.URL+"/v1",
		"COPILOT_PROVIDER_API_KEY=x", "COPILOT_MODEL=fake-model", "COPILOT_AUTO_UPDATE=false",
		"COPILOT_HOME="+filepath.Join(c.home, ".copilot"), "GATEWAY_URL="+gatewayURL,
		"PATH="+filepath.Dir(c.g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	stdout, stderr, err := agenttest.Run(t, 120*time.Second, proj, env, c.bin, "-p", "do the task")
	if err != nil {
		t.Logf("copilot: %v", err)
	}
	return proj, stdout + stderr
}

// TestCopilotCLI drives the real GitHub Copilot CLI through `gateway hook
// copilot`, configured as docs/agents.md says.
func TestCopilotCLI(t *testing.T) {
	agenttest.Bin(t, "copilot")
	g := agenttest.StartGateway(t, `
[hooks.copilot]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)
	c := newCopilot(t, g, copilotSettings)

	t.Run("approved command runs", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "bash", Input: map[string]any{
			"command": "printf gateway-%s approved", "description": "print"}})
		_, out := c.run(t, g.URL, m)
		if !m.Saw("gateway-approved") {
			t.Fatalf("the approved command did not run:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "view", Input: map[string]any{
			"path": filepath.Join(c.home, ".ssh", "id_rsa")}})
		_, out := c.run(t, g.URL, m)
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
			m := agenttest.NewChat(t, agenttest.ToolCall{Name: "create", Input: map[string]any{
				"path": "notes.txt", "file_text": "written after approval\n"}})
			decided := g.DecideNext(60*time.Second, tc.decision)
			proj, out := c.run(t, g.URL, m)
			e := <-decided
			if e.ID == "" {
				t.Fatalf("no request waited for a person:\n%s", out)
			}
			if e.Capability != "fs:write" || e.Target != filepath.Join(proj, "notes.txt") {
				t.Errorf("asked about %s %s, want fs:write on notes.txt", e.Capability, e.Target)
			}
			// preToolUse and then permissionRequest for the one write:
			// one card, the second event answered from it.
			if n := g.MorePending(); n != 0 {
				t.Errorf("%d more cards for the same write", n)
			}
			_, err := os.Stat(filepath.Join(proj, "notes.txt"))
			if written := err == nil; written != tc.written {
				t.Fatalf("%s: file written = %v\n%s", tc.decision, written, out)
			}
			if !tc.written && !m.Saw("denied by") {
				t.Fatalf("the model was not told who denied it:\n%s", out)
			}
		})
	}

	t.Run("gateway that does not answer in time blocks", func(t *testing.T) {
		// A gateway that takes the hook's request and never answers: the
		// hook gives up by itself (its --wait and a margin, well under
		// the 600 s timeoutSec) and denies; Copilot would run a command
		// whose hook timed out.
		hung := make(chan struct{})
		silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hung }))
		defer silent.Close()
		defer close(hung)
		settings := strings.ReplaceAll(copilotSettings, "gateway hook copilot", "gateway hook copilot --wait 2s")
		slow := newCopilot(t, g, settings)
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "bash", Input: map[string]any{
			"command": "printf gateway-%s approved > ran.txt", "description": "print"}})
		proj, out := slow.run(t, silent.URL, m)
		if _, err := os.Stat(filepath.Join(proj, "ran.txt")); err == nil {
			t.Fatalf("the command ran although the gateway never answered:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}
