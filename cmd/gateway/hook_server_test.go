package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/hooks"
)

// serverHookSettings is a gateway whose [hooks.claude_code] waits 2 s,
// maps one MCP tool and denies tools it cannot map.
func serverHookSettings(c *config.Config) {
	c.Hooks["claude-code"].Wait = config.Duration(2 * time.Second)
	c.Hooks["claude-code"].UnknownTool = hooks.Deny
	c.Hooks["claude-code"].Tools = map[string]string{"mcp__acme__summarize": "llm:local"}
}

// TestHookBinary_TakesServerSettings runs the real `gateway hook
// claude-code` binary with no config file and an environment of exactly
// GATEWAY_URL and GATEWAY_TOKEN: the server's tools map, unknown_tool and
// wait decide.
func TestHookBinary_TakesServerSettings(t *testing.T) {
	bin := gatewayBinary(t)
	g := startLive(t, serverHookSettings)
	home := ""
	hook := func(t *testing.T, event string, args ...string) (hooks.Output, time.Duration) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"hook", "claude-code"}, args...)...)
		cmd.Env = []string{"GATEWAY_URL=" + g.URL, "GATEWAY_TOKEN=" + liveAgentToken}
		if home != "" {
			cmd.Env = append(cmd.Env, "HOME="+home) // a config file's default paths need one
		}
		cmd.Dir = t.TempDir()
		cmd.Stdin = strings.NewReader(event)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("hook: %v (stderr %q)", err, stderr.String())
		}
		return hookOutput(t, stdout.String()), time.Since(start)
	}

	t.Run("mapped by the server", func(t *testing.T) {
		out, _ := hook(t, preToolUse(t, "mcp__acme__summarize", "toolu_sum", map[string]any{"text": "notes"}))
		if out.Decision() != hooks.Allow || !strings.Contains(out.Reason(), "llm:local") {
			t.Fatalf("%+v", out)
		}
		r := g.request(t, "toolu_sum")
		if r.Capability != "llm:local" || r.Status != "allowed" {
			t.Fatalf("request %+v", r)
		}
	})
	t.Run("unknown tool denied by the server", func(t *testing.T) {
		out, _ := hook(t, preToolUse(t, "mcp__acme__delete", "toolu_del", map[string]any{"id": "7"}))
		if out.Decision() != hooks.Deny || !strings.Contains(out.Reason(), "no capability mapping") {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("undecided write asks after the server's wait", func(t *testing.T) {
		out, took := hook(t, preToolUse(t, "Write", "toolu_w", map[string]any{"file_path": "/home/r/proj/a.txt", "content": "x"}))
		if out.Decision() != hooks.Ask || !strings.Contains(out.Reason(), "no answer within 2s") {
			t.Fatalf("%+v", out)
		}
		// It waited for the server's 2 s, not the built-in 9 minutes.
		if took < 2*time.Second || took > time.Minute {
			t.Fatalf("answered after %s", took)
		}
		if r := g.request(t, "toolu_w"); r.Status != "cancelled" {
			t.Fatalf("request %+v, want withdrawn", r)
		}
	})
	t.Run("--wait shortens", func(t *testing.T) {
		out, _ := hook(t, preToolUse(t, "Write", "toolu_w1", map[string]any{"file_path": "/home/r/proj/b.txt"}), "--wait", "1s")
		if out.Decision() != hooks.Ask || !strings.Contains(out.Reason(), "no answer within 1s") {
			t.Fatalf("%+v", out)
		}
	})
	t.Run("a local file cannot lengthen", func(t *testing.T) {
		home = t.TempDir()
		cfg := hookConfig(t, "wait = \"1m\"\nunknown_tool = \"ask\"\n")
		out, took := hook(t, preToolUse(t, "Write", "toolu_w2", map[string]any{"file_path": "/home/r/proj/c.txt"}), "--config", cfg)
		if out.Decision() != hooks.Ask || !strings.Contains(out.Reason(), "no answer within 2s") || took > time.Minute {
			t.Fatalf("%+v after %s", out, took)
		}
	})
	t.Run("a local file shortens", func(t *testing.T) {
		cfg := hookConfig(t, "wait = \"1s\"\n")
		out, _ := hook(t, preToolUse(t, "Write", "toolu_w3", map[string]any{"file_path": "/home/r/proj/d.txt"}), "--config", cfg)
		if out.Decision() != hooks.Ask || !strings.Contains(out.Reason(), "no answer within 1s") {
			t.Fatalf("%+v", out)
		}
	})
}

// TestHook_ServerAnswerRelayed: a decision made while the hook waits comes
// back through the server's answer.
func TestHook_ServerAnswerRelayed(t *testing.T) {
	g := startLive(t, func(c *config.Config) { c.Hooks["claude-code"].Wait = config.Duration(time.Minute) })
	events := g.adminEvents(t)
	done := runAsync(agentEnv(t, g.URL), preToolUse(t, "Bash", "toolu_x", map[string]any{"command": "make deploy"}), "hook", "claude-code")
	e := nextRequired(t, events)
	if _, err := g.Admin.Decide(context.Background(), e.ID, "deny"); err != nil {
		t.Fatal(err)
	}
	r := result(t, done)
	out := hookOutput(t, r.stdout)
	if r.code != exitOK || out.Decision() != hooks.Deny || !strings.Contains(out.Reason(), "denied by api:admin") {
		t.Fatalf("exit %d %s", r.code, r.stdout)
	}
}

// request finds the finished request with the given call_id.
func (g *liveGateway) request(t *testing.T, callID string) approvals.Request {
	t.Helper()
	list, err := g.App.Service.ListRecent(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.CallID == callID {
			return r
		}
	}
	t.Fatalf("no finished request with call_id %s", callID)
	return approvals.Request{}
}

func TestMCP_Usage(t *testing.T) {
	cases := []struct {
		env  func(string) string
		args []string
		want string
	}{
		{agentEnv(t, "http://127.0.0.1:1"), []string{"mcp", "extra"}, "unexpected argument"},
		{agentEnv(t, "http://127.0.0.1:1", "GATEWAY_TOKEN", ""), []string{"mcp"}, "GATEWAY_TOKEN is not set"},
		{agentEnv(t, "ftp://x"), []string{"mcp"}, "not an http(s) URL"},
	}
	for _, tc := range cases {
		r := runCLI(context.Background(), tc.env, "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d stderr %q", tc.args, r.code, r.stderr)
		}
	}
}

// TestMCP_Stdio: `gateway mcp` answers an MCP client on stdin/stdout and
// ends when stdin closes.
func TestMCP_Stdio(t *testing.T) {
	g := startLive(t, nil)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		var errb bytes.Buffer
		code <- run(context.Background(), []string{"mcp"}, inR, outW, &errb, agentEnv(t, g.URL))
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(msg string) { io.WriteString(inW, msg+"\n") }
	answer := func(id string) string {
		t.Helper()
		for lines.Scan() {
			if strings.Contains(lines.Text(), `"id":`+id) {
				return lines.Text()
			}
		}
		t.Fatalf("no answer to %s", id)
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	answer("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check","arguments":{"capability":"fs:read","target":"~/.ssh/id_rsa"}}}`)
	if a := answer("2"); !strings.Contains(a, `\"outcome\":\"denied\"`) {
		t.Fatalf("check answered %s", a)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	select {
	case c := <-code:
		if c != exitOK {
			t.Fatalf("exit %d", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("gateway mcp did not end when stdin closed")
	}
}
