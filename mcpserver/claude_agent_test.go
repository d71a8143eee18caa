package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	agenttest.Cleanup()
	os.Exit(code)
}

// Headless Claude Code (`claude -p`, the pinned CLI) asking the gateway
// through its permission prompt tool, `gateway mcp` over stdio, configured
// as docs/agents.md says; a scripted model drives it offline.

// mcpConfig is the --mcp-config file of docs/agents.md.
const mcpConfig = `{
  "mcpServers": {
    "gateway": { "command": "gateway", "args": ["mcp"] }
  }
}
`

// promptClaude is a session whose tool calls need the gateway's word:
// the flags of docs/agents.md.
func promptClaude(t *testing.T, g *agenttest.Gateway, model *agenttest.Anthropic) (*agenttest.Claude, []string) {
	c := agenttest.NewClaude(t, g, model, "")
	cfg := filepath.Join(c.Home, "gateway-mcp.json")
	agenttest.WriteFile(t, cfg, mcpConfig)
	return c, []string{"--mcp-config", cfg, "--permission-prompt-tool", "mcp__gateway__approval_prompt"}
}

const approveTouch = "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"touch made-by-claude\"\naction = \"approve\"\n"

func TestClaudeCodePromptTool_ApprovedCommandRuns(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, approveTouch)
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Bash", Input: map[string]any{
		"command": "touch made-by-claude", "description": "Make a file"}})
	c, args := promptClaude(t, g, model)
	res := c.Run(t, args...)
	if _, err := os.Stat(filepath.Join(c.Cwd, "made-by-claude")); err != nil {
		t.Fatalf("the command did not run: %+v", res)
	}
	if !g.LogHas("capability=code:exec outcome=allowed") {
		t.Fatalf("the gateway did not allow it:\n%s", g.Log())
	}
}

func TestClaudeCodePromptTool_GuardedReadRefused(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, "")
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Read"})
	c, args := promptClaude(t, g, model)
	model.SetInput(map[string]any{"file_path": agenttest.SSHKey(t, c.Home)})
	res := c.Run(t, args...)
	if model.Saw(agenttest.SSHKeySecret) || strings.Contains(res.Result, agenttest.SSHKeySecret) {
		t.Fatal("the key's content reached the model")
	}
	if !strings.Contains(res.Result, "forbidden path .ssh") {
		t.Fatalf("the refusal did not reach the model: %+v", res)
	}
}

func TestClaudeCodePromptTool_WriteWaitsForPerson(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	for _, tc := range []struct {
		decision string
		written  bool
	}{{client.AllowOnce, true}, {client.Deny, false}} {
		t.Run(tc.decision, func(t *testing.T) {
			g := agenttest.StartGateway(t, "")
			model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Write"})
			c, args := promptClaude(t, g, model)
			out := filepath.Join(c.Cwd, "report.txt")
			model.SetInput(map[string]any{"file_path": out, "content": "written by claude\n"})
			res := agenttest.WriteDecidedBy(t, g, c, out, tc.decision, args...)
			b, err := os.ReadFile(out)
			if written := err == nil; written != tc.written || (written && string(b) != "written by claude\n") {
				t.Fatalf("written %v (%q) after %s: %+v", written, b, tc.decision, res)
			}
			if !tc.written && !strings.Contains(res.Result, "denied by api:admin") {
				t.Fatalf("the refusal did not reach the model: %+v", res)
			}
			t.Logf("%s", res.Result)
		})
	}
}
