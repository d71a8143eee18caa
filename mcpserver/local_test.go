package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/mcpserver"
)

// TestApprovalPrompt_ResolvesLinks: `gateway mcp` runs on the agent's
// machine, so approval_prompt follows a link there as `gateway hook`
// does: a Read of a project file that links into a fake ~/.ssh is
// refused by the guard.
func TestApprovalPrompt_ResolvesLinks(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "agent")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{filepath.Join(home, ".ssh"), proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_rsa"), []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.ssh/id_rsa", filepath.Join(proj, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t)
	c := client.New(g.URL, tokenA)
	s := mcpserver.New(mcpserver.Options{
		Backend: func(context.Context, *mcp.CallToolRequest) (mcpserver.Backend, error) { return c, nil },
		Cwd:     proj, Local: true, Home: home,
	})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close(); cancel() })
	a := prompt(t, toolCall(t, cs, "approval_prompt", map[string]any{
		"tool_name": "Read", "input": map[string]any{"file_path": "notes.txt"}, "tool_use_id": "toolu_link"}))
	if a.Behavior != "deny" || !strings.Contains(a.Message, "forbidden path .ssh") {
		t.Fatalf("%+v", a)
	}
}
