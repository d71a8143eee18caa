package hooks_test

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/hooks/agenttest"
	"github.com/metnos/gateway/sandbox"
)

// relay forwards connections on 127.0.0.2 to addr on 127.0.0.1: a model
// API the sandboxed agent reaches through the egress proxy (127.0.0.1 is
// the sandbox's own loopback, which the agent's NO_PROXY sends direct).
func relay(t *testing.T, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine's loopback: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("tcp", addr)
				if err != nil {
					c.Close()
					return
				}
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// TestClaudeCodeUnderGatewayRun: the real Claude Code under `gateway run`
// with its hook: the model's Read of a key through a symlink in the
// workspace fails (the guard denies the resolved path; were it asked, the
// kernel would refuse what the person allowed), and the
// key never reaches the model API, which the agent reaches only through
// the egress proxy, by a rule on its host.
func TestClaudeCodeUnderGatewayRun(t *testing.T) {
	agenttest.Bin(t, "claude") // skip (or fail) before building anything
	if sandbox.KernelABI() < 1 {
		t.Skip("this kernel has no Landlock: gateway run cannot sandbox Claude Code here")
	}
	g := agenttest.StartGateway(t, `
[[policy.rules]]
capability = "network:http"
target = "127.0.0.2"
action = "approve"
`)
	model := agenttest.NewAnthropic(t, agenttest.ToolCall{Name: "Read"})
	c := agenttest.NewClaude(t, g, model, hookSettings)
	agenttest.SSHKey(t, c.Home)
	if err := os.Symlink(filepath.Join(c.Home, ".ssh"), filepath.Join(c.Cwd, "keys")); err != nil {
		t.Fatal(err)
	}
	model.SetInput(map[string]any{"file_path": filepath.Join(c.Cwd, "keys", "id_rsa")})
	base := "http://" + relay(t, strings.TrimPrefix(model.URL, "http://"))
	env := []string{"AGENTTEST_AGENT_TOKEN=" + agenttest.AgentToken, "AGENTTEST_ADMIN_TOKEN=" + agenttest.AdminToken}
	for _, kv := range c.Env {
		if strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") {
			kv = "ANTHROPIC_BASE_URL=" + base
		}
		env = append(env, kv)
	}
	// The hook asks a person about the read, and the person allows it:
	// what holds the key then is the kernel alone.
	decided := g.DecideNext(3*time.Minute, client.AllowOnce)
	stdout, stderr, err := agenttest.Run(t, 4*time.Minute, c.Cwd, env, g.Bin, "run", "--config", filepath.Join(g.Dir, "gateway.toml"), "--",
		agenttest.Bin(t, "claude"), "-p", "Do the one step you are asked to do.", "--output-format", "json")
	var res agenttest.ClaudeResult
	if jerr := json.Unmarshal([]byte(stdout), &res); jerr != nil {
		t.Fatalf("claude under gateway run: %v; stdout %q; stderr %q", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "gateway run: Landlock ABI") || !strings.Contains(stderr, "own network namespace") {
		t.Errorf("start line: %q", stderr)
	}
	if model.Saw(agenttest.SSHKeySecret) || strings.Contains(stdout, agenttest.SSHKeySecret) {
		t.Fatal("the key's content reached the model")
	}
	if !strings.Contains(res.Result, agenttest.FinalPrefix) || !strings.Contains(res.Result, "(error)") && !strings.Contains(strings.ToLower(res.Result), "denied") {
		t.Fatalf("the Read did not fail visibly to the model: %+v\nstderr %s", res, stderr)
	}
	// Two layers hold the key: gateway hook resolves the link on the
	// agent's machine and the guard denies ~/.ssh at once; were it asked
	// instead, the person's allow would still meet the kernel's refusal
	// (the kernel alone: sandbox's TestSymlinkToSSHCannotBeRead).
	select {
	case e := <-decided:
		if e.ID == "" || e.Capability != "fs:read" {
			t.Fatalf("the hook's fs:read was not asked and allowed: %+v", e)
		}
	default:
		if !g.LogHas("capability=fs:read outcome=denied") {
			t.Fatalf("the hook's fs:read was neither denied by the guard nor asked and allowed")
		}
		t.Log("the guard denied the read first: the hook resolved the link to ~/.ssh")
	}
	t.Logf("the model saw: %s", res.Result)
}
