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

// chatAgent is one agent CLI that calls an OpenAI-compatible model (the
// agenttest.Chat stand-in), configured as docs/agents.md says, for the
// checks every such adapter is held to (checkChatAgent).
type chatAgent struct {
	// run runs the agent once in a fresh working directory, made ready by
	// prepare, with the gateway at gatewayURL, and returns that directory
	// and what the agent printed. slow: the hook is told to wait 2 s (--wait 2s, or
	// the plugin's GATEWAY_HOOK_WAIT). asks: the mode in which the agent
	// would prompt for a write (both of its events fire).
	run func(t *testing.T, gatewayURL string, m *agenttest.Chat, slow, asks bool) (dir, out string)
	// The agent's tool names and argument names.
	shell, read, write, pathArg, textArg string
	// writeCard, when set, checks more of the write's request.
	writeCard func(t *testing.T, e client.Event)
}

// chatAgentGateway is the gateway every chatAgent test runs against: one
// command approved by a rule, a minute's wait for a person.
func chatAgentGateway(t *testing.T, section string) *agenttest.Gateway {
	return agenttest.StartGateway(t, `
[`+section+`]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)
}

// checkChatAgent: an approved command runs; a guarded read is refused
// and the key never reaches the model; a write waits for a person, runs
// on Allow once and not on Deny, with one card even where the agent fires
// two events for it; a gateway that never answers ends in a refusal.
func checkChatAgent(t *testing.T, g *agenttest.Gateway, a chatAgent) {
	shell := func(cmd string) *agenttest.Chat {
		return agenttest.NewChat(t, agenttest.ToolCall{Name: a.shell, Input: map[string]any{"command": cmd, "description": "print"}})
	}

	t.Run("approved command runs", func(t *testing.T) {
		m := shell("printf gateway-%s approved")
		_, out := a.run(t, g.URL, m, false, false)
		if !m.Saw("gateway-approved") {
			t.Fatalf("the approved command did not run:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: a.read})
		_, out := a.run(t, g.URL, m, false, false)
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
			m := agenttest.NewChat(t, agenttest.ToolCall{Name: a.write})
			decided := g.DecideNext(90*time.Second, tc.decision)
			dir, out := a.run(t, g.URL, m, false, true)
			e := <-decided
			target := filepath.Join(dir, "notes.txt")
			if e.ID == "" {
				t.Fatalf("no request waited for a person:\n%s", out)
			}
			if e.Capability != "fs:write" || e.Target != target {
				t.Errorf("asked about %s %s, want fs:write on %s", e.Capability, e.Target, target)
			}
			if a.writeCard != nil {
				a.writeCard(t, e)
			}
			if n := g.MorePending(); n != 0 {
				t.Errorf("%d more cards for the same write", n)
			}
			_, err := os.Stat(target)
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
		// hook gives up by itself and denies, well before the agent's own
		// hook timeout (which, for these agents, would run the command).
		hung := make(chan struct{})
		silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hung }))
		defer silent.Close()
		defer close(hung)
		m := shell("printf gateway-%s approved > ran.txt")
		dir, out := a.run(t, silent.URL, m, true, false)
		if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil {
			t.Fatalf("the command ran although the gateway never answered:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}

// prepare readies dir for one run: an SSH key in dir/.ssh (the guard
// forbids it wherever it is), and the scripted call's path (the key, or
// notes.txt for a write) in dir.
func prepare(t *testing.T, a chatAgent, dir string, m *agenttest.Chat) {
	t.Helper()
	key := agenttest.SSHKey(t, dir)
	switch m.Call().Name {
	case a.read:
		m.SetInput(map[string]any{a.pathArg: key})
	case a.write:
		m.SetInput(map[string]any{a.pathArg: filepath.Join(dir, "notes.txt"), a.textArg: "written after approval\n"})
	}
}
