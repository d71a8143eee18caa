package hooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

// codexModel is a scripted stand-in for the OpenAI Responses API as Codex
// streams it: the first turn calls exec_command once with cmd, the next
// (the one carrying the function_call_output) ends the turn quoting the
// tool's output.
func codexModel(t *testing.T, cmd string) *agenttest.Model {
	return codexModelArgs(t, map[string]any{"cmd": cmd})
}

// codexModelArgs is codexModel with the exec_command arguments given whole.
func codexModelArgs(t *testing.T, args map[string]any) *agenttest.Model {
	return codexModelTool(t, "exec_command", args)
}

// codexModelTool is codexModel calling any function tool.
func codexModelTool(t *testing.T, tool string, args map[string]any) *agenttest.Model {
	return agenttest.NewModel(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Input []struct {
				Type   string `json:"type"`
				Output any    `json:"output"`
			} `json:"input"`
		}
		_ = json.Unmarshal(body, &req)
		result, done := "", false
		for _, it := range req.Input {
			if it.Type == "function_call_output" {
				done = true
				if s, ok := it.Output.(string); ok {
					result = s
				} else {
					b, _ := json.Marshal(it.Output)
					result = string(b)
				}
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ string, v map[string]any) {
			v["type"] = typ
			b, _ := json.Marshal(v)
			agenttest.SSE(w, typ, b)
		}
		ev("response.created", map[string]any{"response": map[string]any{"id": fmt.Sprintf("resp_%d", n)}})
		item := map[string]any{"type": "function_call", "id": "fc_1", "call_id": "call_gw1", "name": tool,
			"arguments": mustJSON(args)}
		if ns, name, ok := strings.Cut(tool, "/"); ok {
			item["namespace"], item["name"] = ns, name // a tool of a namespace (an MCP server's)
		}
		if done {
			item = map[string]any{"type": "message", "role": "assistant", "id": "msg_1",
				"content": []any{map[string]any{"type": "output_text", "text": "TOOL RESULT: " + result}}}
		}
		ev("response.output_item.done", map[string]any{"output_index": 0, "item": item})
		ev("response.completed", map[string]any{"response": map[string]any{"id": fmt.Sprintf("resp_%d", n),
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}})
	})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// codexHookConfig is the hook part of ~/.codex/config.toml exactly as
// docs/agents.md gives it.
const codexHookConfig = `
[[hooks.PreToolUse]]
matcher = "Bash|apply_patch|Edit|Write|mcp__.*"
[[hooks.PreToolUse.hooks]]
type = "command"
command = "gateway hook codex"
timeout = 600

[[hooks.PermissionRequest]]
matcher = "Bash|apply_patch|Edit|Write|mcp__.*"
[[hooks.PermissionRequest.hooks]]
type = "command"
command = "gateway hook codex"
timeout = 600
`

// codexRun runs `codex exec` once in a fresh HOME against model and the
// gateway at gatewayURL, with the hook configured as docs/agents.md says,
// and returns the project directory and Codex's output.
func codexRun(t *testing.T, g *agenttest.Gateway, gatewayURL string, model *agenttest.Model) (proj, out string) {
	t.Helper()
	codex, proj, env := codexHome(t, g, gatewayURL, model)
	stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, codex,
		"exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "do the task")
	if err != nil {
		t.Fatalf("codex exec: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return proj, stdout + stderr
}

// codexHome makes a fresh HOME with ~/.codex/config.toml pointing at
// model and holding the hooks of docs/agents.md, trusted, and a key in
// ~/.ssh; it returns the codex binary, the project directory and the
// environment to run it in.
func codexHome(t *testing.T, g *agenttest.Gateway, gatewayURL string, model *agenttest.Model, extra ...string) (codex, proj string, env []string) {
	t.Helper()
	codex = agenttest.Bin(t, "codex")
	home := t.TempDir()
	proj = filepath.Join(home, "proj")
	for _, d := range []string{proj, filepath.Join(home, ".codex"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- SECRET-KEY-MATERIAL-4711\n")
	cfg := fmt.Sprintf(`model_provider = "standin"
model = "gpt-5.1-codex"

[model_providers.standin]
name = "stand-in"
base_url = "%s/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"
%s%s`, model.URL, codexHookConfig, strings.Join(extra, "\n"))
	writeTestFile(t, filepath.Join(home, ".codex", "config.toml"), cfg)
	env = g.Env(home, "CODEX_HOME="+filepath.Join(home, ".codex"), "STANDIN_API_KEY=x",
		"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if gatewayURL != g.URL {
		env = append(env, "GATEWAY_URL="+gatewayURL)
	}
	codexTrustHooks(t, codex, env, proj, filepath.Join(home, ".codex", "config.toml"))
	return codex, proj, env
}

// codexTrustHooks trusts the configured hooks the way Codex's /hooks
// review does: it asks Codex (its app server's hooks/list) for each hook's
// key and current hash and records them as [hooks.state."KEY"]
// trusted_hash in config.toml. Codex runs no hook it was not told to trust.
func codexTrustHooks(t *testing.T, codex string, env []string, proj, configPath string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "app-server")
	cmd.Env, cmd.Dir = env, proj
	reap := agenttest.Contain(cmd)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); cancel(); cmd.Wait(); reap() }()
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"gateway-test","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"initialized"}`,
		mustJSON(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": map[string]any{"cwds": []string{proj}}}),
	} {
		if _, err := io.WriteString(in, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []struct {
						Key, CurrentHash, TrustStatus string
					} `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID != 2 {
			continue
		}
		var state strings.Builder
		n := 0
		for _, d := range resp.Result.Data {
			for _, h := range d.Hooks {
				if h.TrustStatus != "untrusted" {
					t.Fatalf("hook %s is %s before review", h.Key, h.TrustStatus)
				}
				fmt.Fprintf(&state, "\n[hooks.state.%s]\ntrusted_hash = %s\n", mustJSON(h.Key), mustJSON(h.CurrentHash))
				n++
			}
		}
		if n != 2 {
			t.Fatalf("Codex lists %d hooks, want the 2 of docs/agents.md", n)
		}
		f, err := os.OpenFile(configPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(state.String()); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("codex app-server did not list the hooks: %v", sc.Err())
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// patchCmd is the shell command Codex's models use to edit files: an
// apply_patch heredoc, which Codex applies itself.
func patchCmd(file, line string) string {
	return "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + file + "\n+" + line + "\n*** End Patch\nEOF\n"
}

// TestCodexCLI drives the real Codex CLI through `gateway hook codex`.
func TestCodexCLI(t *testing.T) {
	agenttest.Bin(t, "codex")
	g := agenttest.StartGateway(t, `
[hooks.codex]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)

	t.Run("approved command runs", func(t *testing.T) {
		m := codexModel(t, "printf gateway-%s approved")
		_, out := codexRun(t, g, g.URL, m)
		// Only the command's output says gateway-approved; the model quotes it.
		if !m.Saw("gateway-approved") || !strings.Contains(out, "TOOL RESULT:") || !strings.Contains(out, "gateway-approved") {
			t.Fatalf("the approved command did not run, or its output was not quoted:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		m := codexModel(t, "cat ~/.ssh/id_rsa")
		_, out := codexRun(t, g, g.URL, m)
		if m.Saw("SECRET-KEY-MATERIAL") {
			t.Fatal("the key's content reached the model")
		}
		if !m.Saw("forbidden path .ssh") || !strings.Contains(out, "TOOL RESULT:") {
			t.Fatalf("the model was not told the guard refused it:\n%s", out)
		}
	})

	for _, tc := range []struct {
		decision string
		written  bool
	}{{client.AllowOnce, true}, {client.Deny, false}} {
		t.Run("write waits for a person: "+tc.decision, func(t *testing.T) {
			m := codexModel(t, patchCmd("notes.txt", "written after approval"))
			decided := g.DecideNext(60*time.Second, tc.decision)
			proj, out := codexRun(t, g, g.URL, m)
			e := <-decided
			if e.ID == "" {
				t.Fatalf("no request waited for a person:\n%s", out)
			}
			if e.Capability != "fs:write" || e.Target != filepath.Join(proj, "notes.txt") {
				t.Errorf("asked about %s %s, want fs:write on notes.txt", e.Capability, e.Target)
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

	// Codex trims each patch line before it matches a header: a header
	// indented with a tab is a file Codex writes, so it is asked about
	// too, and one deny stops the whole patch.
	t.Run("indented header asked about", func(t *testing.T) {
		m := codexModel(t, "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+x\n \t*** Add File: ../outside.txt\n+y\n*** End Patch\nEOF\n")
		asked := make(chan [2]client.Event, 1)
		first := g.DecideNext(60*time.Second, client.AllowOnce)
		go func() {
			e1 := <-first
			asked <- [2]client.Event{e1, <-g.DecideNext(60*time.Second, client.Deny)}
		}()
		proj, out := codexRun(t, g, g.URL, m)
		e := <-asked
		outside := filepath.Join(filepath.Dir(proj), "outside.txt")
		if e[0].Target != filepath.Join(proj, "notes.txt") || e[1].Target != outside {
			t.Fatalf("asked about %q and %q, want notes.txt and %s:\n%s", e[0].Target, e[1].Target, outside, out)
		}
		for _, f := range []string{filepath.Join(proj, "notes.txt"), outside} {
			if _, err := os.Stat(f); err == nil {
				t.Fatalf("%s written though the patch was denied:\n%s", f, out)
			}
		}
	})

	t.Run("gateway down blocks", func(t *testing.T) {
		m := codexModel(t, "printf gateway-%s approved")
		_, out := codexRun(t, g, "http://127.0.0.1:1", m)
		if m.Saw("gateway-approved") {
			t.Fatalf("the command ran with the gateway down:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}

// TestCodexAppServer_PermissionRequest: in Codex's app server, with its
// sandbox read-only and approval on request, a command that asks to leave
// the sandbox goes through PreToolUse and then PermissionRequest; the
// gateway's answer to the second replaces Codex's own approval prompt.
func TestCodexAppServer_PermissionRequest(t *testing.T) {
	agenttest.Bin(t, "codex")
	g := agenttest.StartGateway(t, `
[hooks.codex]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s escalated"
action = "approve"
`)
	thread := func() map[string]any { return map[string]any{"approvalPolicy": "on-request", "sandbox": "read-only"} }
	escalate := func(cmd string) map[string]any {
		return map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "needs to leave the sandbox"}
	}

	t.Run("allowed without Codex's prompt", func(t *testing.T) {
		m := codexModelArgs(t, escalate("printf gateway-%s escalated"))
		codex, proj, env := codexHome(t, g, g.URL, m)
		prompts := codexAppTurn(t, codex, proj, env, thread())
		if len(prompts) != 0 {
			t.Fatalf("Codex still asked its client: %v", prompts)
		}
		if !m.Saw("gateway-escalated") {
			t.Fatal("the escalated command did not run")
		}
	})

	t.Run("a person allows the call, then denies leaving the sandbox", func(t *testing.T) {
		m := codexModelArgs(t, escalate("touch escalated.txt"))
		codex, proj, env := codexHome(t, g, g.URL, m)
		first := g.DecideNext(60*time.Second, client.AllowOnce)
		prompts := make(chan []string, 1)
		go func() { prompts <- codexAppTurn(t, codex, proj, env, thread()) }()
		// One reader of the event stream at a time: the second request
		// comes only once the first is decided.
		e1 := <-first
		e2 := <-g.DecideNext(60*time.Second, client.Deny)
		if e1.ID == "" || e2.ID == "" || e1.ID == e2.ID {
			t.Fatalf("want two requests, got %q and %q", e1.ID, e2.ID)
		}
		select {
		case p := <-prompts:
			if len(p) != 0 {
				t.Fatalf("Codex still asked its client: %v", p)
			}
		case <-time.After(100 * time.Second):
			t.Fatal("the turn did not end")
		}
		if _, err := os.Stat(filepath.Join(proj, "escalated.txt")); err == nil {
			t.Fatal("the command ran though leaving the sandbox was denied")
		}
		if !m.Saw("denied by") {
			t.Fatal("the model was not told who denied it")
		}
	})
}

// TestCodexCLI_MCPTool: an MCP tool (here the gateway's own `gateway mcp`
// as one of Codex's MCP servers) reaches PreToolUse as
// mcp__server__tool and is decided by the server's [hooks.codex.tools];
// one the map does not name is blocked (unknown_tool ask: Codex cannot ask).
func TestCodexCLI_MCPTool(t *testing.T) {
	codex := agenttest.Bin(t, "codex")
	g := agenttest.StartGateway(t, `
[hooks.codex]
wait = "60s"

[hooks.codex.tools]
"mcp__gateway__check" = "time:read"
`)
	mcp := `
[mcp_servers.gateway]
command = "gateway"
args = ["mcp"]
env_vars = ["GATEWAY_URL", "GATEWAY_TOKEN"]
`
	run := func(model *agenttest.Model) string {
		_, proj, env := codexHome(t, g, g.URL, model, mcp)
		stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, codex,
			"exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", "do the task")
		if err != nil {
			t.Fatalf("codex exec: %v\n%s\n%s", err, stdout, stderr)
		}
		return stdout + stderr
	}

	t.Run("mapped MCP tool runs", func(t *testing.T) {
		m := codexModelTool(t, "mcp__gateway/check", map[string]any{"capability": "llm:local"})
		out := run(m)
		// check's own answer (policy's outcome for llm:local) reached the model.
		if !m.Saw(`llm:local is allowed`) {
			t.Fatalf("the mapped MCP tool did not run:\n%s", out)
		}
	})
	t.Run("unmapped MCP tool blocked", func(t *testing.T) {
		m := codexModelTool(t, "mcp__gateway/request_approval", map[string]any{"capability": "llm:local"})
		out := run(m)
		if !m.Saw("no capability mapping") || !m.Saw("hooks.codex.tools") {
			t.Fatalf("the unmapped MCP tool was not blocked:\n%s", out)
		}
	})
}
