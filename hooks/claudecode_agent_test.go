package hooks_test

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

// The real Claude Code (the pinned CLI), driven offline by a scripted
// model, with the command hook configured exactly as docs/agents.md says.

// hookSettings is the ~/.claude/settings.json of docs/agents.md.
const hookSettings = `{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Glob|Grep|WebFetch",
        "hooks": [
          { "type": "command", "command": "gateway hook claude-code", "timeout": 600 }
        ]
      }
    ]
  }
}
`

// approveTouch is a gateway rule that approves one command (one Claude
// Code itself would ask about: it changes a file).
const approveTouch = "[[policy.rules]]\ncapability = \"code:exec\"\ntarget = \"touch made-by-claude\"\naction = \"approve\"\n"

func TestClaudeCodeHook_ApprovedCommandRuns(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, approveTouch)
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Bash", Input: map[string]any{
		"command": "touch made-by-claude", "description": "Make a file"}})
	c := agenttest.NewClaude(t, g, model, hookSettings)
	res := c.Run(t)
	if _, err := os.Stat(filepath.Join(c.Cwd, "made-by-claude")); err != nil {
		t.Fatalf("the command did not run: %+v", res)
	}
	if !g.LogHas("capability=code:exec outcome=allowed") {
		t.Fatalf("the gateway did not allow it:\n%s", g.Log())
	}
}

func TestClaudeCodeHook_GuardedReadRefused(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	g := agenttest.StartGateway(t, "")
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Read"})
	c := agenttest.NewClaude(t, g, model, hookSettings)
	key := agenttest.SSHKey(t, c.Home)
	model.SetInput(map[string]any{"file_path": key})
	res := c.Run(t)
	if model.Saw(agenttest.SSHKeySecret) || strings.Contains(res.Result, agenttest.SSHKeySecret) {
		t.Fatal("the key's content reached the model")
	}
	if !strings.Contains(res.Result, "forbidden path .ssh") {
		t.Fatalf("the refusal did not reach the model: %+v", res)
	}
}

func TestClaudeCodeHook_WriteWaitsForPerson(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	for _, tc := range []struct {
		decision string
		written  bool
	}{{client.AllowOnce, true}, {client.Deny, false}} {
		t.Run(tc.decision, func(t *testing.T) {
			g := agenttest.StartGateway(t, "")
			model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Write"})
			c := agenttest.NewClaude(t, g, model, hookSettings)
			out := filepath.Join(c.Cwd, "report.txt")
			model.SetInput(map[string]any{"file_path": out, "content": "written by claude\n"})
			res := agenttest.WriteDecidedBy(t, g, c, out, tc.decision)
			b, err := os.ReadFile(out)
			if written := err == nil; written != tc.written || (written && string(b) != "written by claude\n") {
				t.Fatalf("written %v (%q) after %s: %+v", written, b, tc.decision, res)
			}
			if !tc.written && !strings.Contains(res.Result, "denied by api:admin") {
				t.Fatalf("the refusal did not reach the model: %+v", res)
			}
		})
	}
}
