package hooks_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

// geminiModel is a scripted stand-in for the Gemini API as Gemini CLI
// calls it (generateContent and streamGenerateContent): the first turn
// asks for one call of tool with args, the next (the one carrying the
// functionResponse) ends the turn quoting the tool's response.
func geminiModel(t *testing.T, tool string, args map[string]any) *agenttest.Model {
	return agenttest.NewModel(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		path := r.URL.Path
		if strings.HasSuffix(path, ":countTokens") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"totalTokens":1}`))
			return
		}
		if !strings.HasSuffix(path, ":generateContent") && !strings.HasSuffix(path, ":streamGenerateContent") {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Contents []struct {
				Parts []struct {
					FunctionResponse *struct {
						Response any `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		_ = json.Unmarshal(body, &req)
		var result any
		done := false
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil {
					done, result = true, p.FunctionResponse.Response
				}
			}
		}
		part := map[string]any{"functionCall": map[string]any{"name": tool, "args": args}}
		if done {
			part = map[string]any{"text": "TOOL RESULT: " + mustJSON(result)}
		}
		answer := mustJSON(map[string]any{
			"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
				"content": map[string]any{"role": "model", "parts": []any{part}}}},
			"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
			"modelVersion":  "gemini-2.5-flash",
		})
		if strings.HasSuffix(path, ":streamGenerateContent") {
			w.Header().Set("Content-Type", "text/event-stream")
			agenttest.SSE(w, "", []byte(answer))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(answer))
	})
}

// geminiSettings is ~/.gemini/settings.json with the hook exactly as
// docs/agents.md gives it for headless runs (`gemini -p`, with --no-ask:
// nobody is there to answer Gemini CLI's prompt), plus the API-key auth.
const geminiSettings = `{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "run_shell_command|write_file|replace|read_file|read_many_files|glob|search_file_content|grep_search|list_directory|web_fetch|mcp_.*",
        "hooks": [
          { "type": "command", "name": "approval-gateway", "command": "gateway hook gemini --no-ask", "timeout": 600000 }
        ]
      }
    ]
  }
}
`

// geminiRun runs `gemini -p` once in a fresh HOME against model and the
// gateway at gatewayURL, and returns the project directory and output.
func geminiRun(t *testing.T, g *agenttest.Gateway, gatewayURL string, model *agenttest.Model) (proj, out string) {
	t.Helper()
	return geminiRunIn(t, g, gatewayURL, model, geminiSettings)
}

// geminiRunWith is geminiRun with other settings.json contents.
func geminiRunWith(t *testing.T, g *agenttest.Gateway, model *agenttest.Model, settings string) string {
	t.Helper()
	_, out := geminiRunIn(t, g, g.URL, model, settings)
	return out
}

func geminiRunIn(t *testing.T, g *agenttest.Gateway, gatewayURL string, model *agenttest.Model, settings string) (proj, out string) {
	t.Helper()
	gemini := agenttest.Bin(t, "gemini")
	home := t.TempDir()
	proj = filepath.Join(home, "proj")
	for _, d := range []string{proj, filepath.Join(home, ".gemini"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, filepath.Join(home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- SECRET-KEY-MATERIAL-4711\n")
	writeTestFile(t, filepath.Join(home, ".gemini", "settings.json"), settings)
	env := g.Env(home, "GEMINI_API_KEY=x", "GOOGLE_GEMINI_BASE_URL="+model.URL, "GEMINI_CLI_TRUST_WORKSPACE=true",
		"PATH="+filepath.Dir(g.Bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if gatewayURL != g.URL {
		env = append(env, "GATEWAY_URL="+gatewayURL)
	}
	stdout, stderr, err := agenttest.Run(t, 90*time.Second, proj, env, gemini,
		"-p", "do the task", "-m", "gemini-2.5-flash", "--yolo")
	out = stdout + stderr
	if err != nil && !strings.Contains(out, "TOOL RESULT") {
		t.Logf("gemini: %v", err)
	}
	return proj, out
}

// TestGeminiCLI drives the real Gemini CLI through `gateway hook gemini`.
func TestGeminiCLI(t *testing.T) {
	agenttest.Bin(t, "gemini")
	g := agenttest.StartGateway(t, `
[hooks.gemini]
wait = "60s"

[[policy.rules]]
capability = "code:exec"
target = "printf gateway-%s approved"
action = "approve"
`)

	t.Run("approved command runs", func(t *testing.T) {
		m := geminiModel(t, "run_shell_command", map[string]any{"command": "printf gateway-%s approved", "description": "print"})
		_, out := geminiRun(t, g, g.URL, m)
		if !m.Saw("gateway-approved") || !strings.Contains(out, "gateway-approved") {
			t.Fatalf("the approved command did not run, or its output was not quoted:\n%s", out)
		}
	})

	t.Run("guarded read refused", func(t *testing.T) {
		m := geminiModel(t, "read_file", map[string]any{"file_path": "~/.ssh/id_rsa"})
		_, out := geminiRun(t, g, g.URL, m)
		if m.Saw("SECRET-KEY-MATERIAL") {
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
			m := geminiModel(t, "write_file", map[string]any{"file_path": "notes.txt", "content": "written after approval\n"})
			decided := g.DecideNext(60*time.Second, tc.decision)
			proj, out := geminiRun(t, g, g.URL, m)
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

	t.Run("gateway down blocks", func(t *testing.T) {
		m := geminiModel(t, "run_shell_command", map[string]any{"command": "printf gateway-%s approved", "description": "print"})
		_, out := geminiRun(t, g, "http://127.0.0.1:1", m)
		if m.Saw("gateway-approved") {
			t.Fatalf("the command ran with the gateway down:\n%s", out)
		}
		if !m.Saw("not consulted") {
			t.Fatalf("the model was not told the gateway was not consulted:\n%s", out)
		}
	})
}

// TestGeminiCLI_MCPTool: an MCP tool (the gateway's own `gateway mcp` as
// one of Gemini CLI's MCP servers) reaches BeforeTool as mcp_server_tool
// and is decided by the server's [hooks.gemini.tools]; one the map does
// not name is refused (unknown_tool ask, headless: --no-ask).
func TestGeminiCLI_MCPTool(t *testing.T) {
	agenttest.Bin(t, "gemini")
	g := agenttest.StartGateway(t, `
[hooks.gemini]
wait = "60s"

[hooks.gemini.tools]
"mcp_gateway_check" = "time:read"
`)
	settings := strings.Replace(geminiSettings, `"hooks": {`, `"mcpServers": {
    "gateway": { "command": "gateway", "args": ["mcp"], "env": { "GATEWAY_URL": "$GATEWAY_URL", "GATEWAY_TOKEN": "$GATEWAY_TOKEN" } }
  },
  "hooks": {`, 1)

	t.Run("mapped MCP tool runs", func(t *testing.T) {
		m := geminiModel(t, "mcp_gateway_check", map[string]any{"capability": "llm:local"})
		out := geminiRunWith(t, g, m, settings)
		if !m.Saw("llm:local is allowed") {
			t.Fatalf("the mapped MCP tool did not run:\n%s", out)
		}
	})
	t.Run("unmapped MCP tool refused", func(t *testing.T) {
		m := geminiModel(t, "mcp_gateway_request_approval", map[string]any{"capability": "llm:local"})
		out := geminiRunWith(t, g, m, settings)
		if !m.Saw("no capability mapping") || !m.Saw("hooks.gemini.tools") {
			t.Fatalf("the unmapped MCP tool was not refused:\n%s", out)
		}
	})
}
