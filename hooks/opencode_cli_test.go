package hooks_test

import (
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

// openCode runs the real OpenCode (`opencode run`) with the plugin that
// `gateway hook opencode --plugin` prints, saved and configured as
// docs/agents.md says (with its air-gapped lock file), and the stand-in
// model as an OpenAI-compatible provider.
type openCode struct {
	bin, home string
	g         *agenttest.Gateway
}

func newOpenCode(t *testing.T, g *agenttest.Gateway) *openCode {
	t.Helper()
	o := &openCode{bin: agenttest.Bin(t, "opencode"), home: t.TempDir(), g: g}
	plugin, err := exec.Command(g.Bin, "hook", "opencode", "--plugin").Output()
	if err != nil {
		t.Fatalf("gateway hook opencode --plugin: %v", err)
	}
	agenttest.WriteFile(t, filepath.Join(o.home, ".local", "share", "gateway", "opencode-plugin.js"), string(plugin))
	cfg := filepath.Join(o.home, ".config", "opencode")
	if err := os.MkdirAll(filepath.Join(cfg, "node_modules"), 0o700); err != nil {
		t.Fatal(err)
	}
	agenttest.WriteFile(t, filepath.Join(cfg, "package-lock.json"),
		`{"lockfileVersion":3,"packages":{"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}}}`+"\n")
	agenttest.SSHKey(t, o.home)
	return o
}

// run asks the model (scripted to make one call) in a fresh project
// directory with the gateway at gatewayURL and env added; it returns the
// directory and what OpenCode printed.
func (o *openCode) run(t *testing.T, gatewayURL string, m *agenttest.Chat, env ...string) (proj, out string) {
	t.Helper()
	proj, err := os.MkdirTemp(o.home, "proj-")
	if err != nil {
		t.Fatal(err)
	}
	plugin := "file://" + filepath.Join(o.home, ".local", "share", "gateway", "opencode-plugin.js")
	agenttest.WriteFile(t, filepath.Join(o.home, ".config", "opencode", "opencode.json"), `{
  "plugin": ["`+plugin+`"],
  "permission": { "bash": "allow", "edit": "allow", "webfetch": "allow", "external_directory": "allow" },
  "provider": { "fake": { "npm": "@ai-sdk/openai-compatible", "name": "Fake",
    "options": { "baseURL": "`+m.URL+`/v1", "apiKey": "sk-fake" },
    "models": { "fake-model": { "name": "Fake Model", "tool_call": true } } } },
  "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": false, "share": "disabled"
}
`)
	h := o.home
	env = append(o.g.Env(h, "XDG_CONFIG_HOME="+h+"/.config", "XDG_DATA_HOME="+h+"/.local/share",
		"XDG_CACHE_HOME="+h+"/.cache", "XDG_STATE_HOME="+h+"/.local/state", "OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1",
		"GATEWAY_URL="+gatewayURL), env...)
	stdout, stderr, err := agenttest.Run(t, 150*time.Second, proj, env, o.bin, "run", "do the task")
	if err != nil {
		t.Logf("opencode: %v", err)
	}
	return proj, stdout + stderr
}

// TestOpenCode drives the real OpenCode through the gateway's plugin.
func TestOpenCode(t *testing.T) {
	agenttest.Bin(t, "opencode")
	g := agenttest.StartGateway(t, `
[hooks.opencode]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)
	o := newOpenCode(t, g)

	t.Run("approved command runs", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "bash", Input: map[string]any{
			"command": "printf gateway-%s approved", "description": "print"}})
		_, out := o.run(t, g.URL, m)
		if !m.Saw("gateway-approved") {
			t.Fatalf("the approved command did not run:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "read", Input: map[string]any{
			"filePath": filepath.Join(o.home, ".ssh", "id_rsa")}})
		_, out := o.run(t, g.URL, m)
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
			m := agenttest.NewChat(t, agenttest.ToolCall{Name: "write", Input: map[string]any{
				"filePath": "notes.txt", "content": "written after approval\n"}})
			decided := g.DecideNext(90*time.Second, tc.decision)
			proj, out := o.run(t, g.URL, m)
			e := <-decided
			if e.ID == "" {
				t.Fatalf("no request waited for a person:\n%s", out)
			}
			if e.Capability != "fs:write" || e.Target != filepath.Join(proj, "notes.txt") {
				t.Errorf("asked about %s %s, want fs:write on notes.txt", e.Capability, e.Target)
			}
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
		hung := make(chan struct{})
		silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hung }))
		defer silent.Close()
		defer close(hung)
		m := agenttest.NewChat(t, agenttest.ToolCall{Name: "bash", Input: map[string]any{
			"command": "printf gateway-%s approved > ran.txt", "description": "print"}})
		proj, out := o.run(t, silent.URL, m, "GATEWAY_HOOK_WAIT=2s")
		if _, err := os.Stat(filepath.Join(proj, "ran.txt")); err == nil {
			t.Fatalf("the command ran although the gateway never answered:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}
