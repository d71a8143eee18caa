package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
)

func agentEvent(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func codexPre(t *testing.T, session, id string, tool string, input map[string]any) string {
	return agentEvent(t, map[string]any{"session_id": session, "turn_id": "t1", "transcript_path": nil, "cwd": "/home/r/proj",
		"hook_event_name": "PreToolUse", "model": "gpt-5.1-codex", "permission_mode": "default",
		"tool_name": tool, "tool_input": input, "tool_use_id": id})
}

// answer parses a hook's stdout: exactly one JSON object on one line.
func answer(t *testing.T, r cliResult) map[string]any {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	var m map[string]any
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &m) != nil || m == nil {
		t.Fatalf("stdout %q is not one JSON object", r.stdout)
	}
	return m
}

func field(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, _ := cur.(map[string]any)
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

// agentHookSettings: the server maps one MCP tool per agent and waits 2 s.
func agentHookSettings(c *config.Config) {
	for _, s := range []*config.HookAgent{c.Hooks["codex"], c.Hooks["gemini"], c.Hooks["cursor"]} {
		s.Wait = config.Duration(2 * time.Second)
	}
	c.Hooks["codex"].Tools = map[string]string{"mcp__acme__summarize": "llm:local"}
	c.Hooks["gemini"].Tools = map[string]string{"mcp_acme_summarize": "llm:local"}
	c.Hooks["cursor"].Tools = map[string]string{"summarize": "llm:local"}
	c.Hooks["cursor"].UnknownTool = "deny"
	c.Policy.Rules = append(c.Policy.Rules, config.Rule{Capability: "code:exec", Target: "git status", Action: "approve"})
}

// TestAgentHooks: each adapter through the command and the server's
// endpoint, with only GATEWAY_URL and GATEWAY_TOKEN: the server's tools
// map, unknown_tool and wait decide, and the answer is the agent's own.
func TestAgentHooks(t *testing.T) {
	g := startLive(t, agentHookSettings)
	env := agentEnv(t, g.URL)
	run := func(t *testing.T, event string, args ...string) map[string]any {
		t.Helper()
		return answer(t, runCLI(context.Background(), env, event, append([]string{"hook"}, args...)...))
	}

	t.Run("codex allowed goes on", func(t *testing.T) {
		m := run(t, codexPre(t, "s1", "c1", "Bash", map[string]any{"command": "git status"}), "codex")
		if len(m) != 0 {
			t.Fatalf("%v, want {}", m)
		}
	})
	t.Run("codex mapped by the server", func(t *testing.T) {
		m := run(t, codexPre(t, "s1", "c2", "mcp__acme__summarize", map[string]any{"text": "x"}), "codex")
		if len(m) != 0 {
			t.Fatalf("%v, want {}", m)
		}
	})
	t.Run("codex guard denies", func(t *testing.T) {
		m := run(t, codexPre(t, "s1", "c3", "Bash", map[string]any{"command": "cat ~/.ssh/id_rsa"}), "codex")
		if field(m, "hookSpecificOutput", "permissionDecision") != "deny" || !strings.Contains(field(m, "hookSpecificOutput", "permissionDecisionReason"), "forbidden path .ssh") {
			t.Fatalf("%v", m)
		}
	})
	t.Run("codex PermissionRequest allowed", func(t *testing.T) {
		ev := strings.Replace(codexPre(t, "s1", "c1", "Bash", map[string]any{"command": "git status"}), `"PreToolUse"`, `"PermissionRequest"`, 1)
		m := run(t, ev, "codex")
		if field(m, "hookSpecificOutput", "decision", "behavior") != "allow" {
			t.Fatalf("%v", m)
		}
	})
	t.Run("codex patch: every path must be allowed", func(t *testing.T) {
		events := g.adminEvents(t)
		patch := "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** Add File: b.txt\n+y\n*** End Patch\nEOF\n"
		done := runAsync(env, codexPre(t, "s2", "p1", "Bash", map[string]any{"command": patch}), "hook", "codex")
		first, second := nextRequired(t, events), nextRequired(t, events)
		if first.Target != "/home/r/proj/a.txt" || second.Target != "/home/r/proj/b.txt" || first.Capability != "fs:write" {
			t.Fatalf("asked %s %s, %s %s", first.Capability, first.Target, second.Capability, second.Target)
		}
		if _, err := g.Admin.Decide(context.Background(), first.ID, client.AllowOnce); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Admin.Decide(context.Background(), second.ID, client.Deny); err != nil {
			t.Fatal(err)
		}
		m := answer(t, result(t, done))
		if field(m, "hookSpecificOutput", "permissionDecision") != "deny" {
			t.Fatalf("one path denied, yet %v", m)
		}
	})
	t.Run("codex no answer blocks and withdraws", func(t *testing.T) {
		start := time.Now()
		m := run(t, codexPre(t, "s3", "w1", "Bash", map[string]any{"command": "make deploy"}), "codex")
		reason := field(m, "hookSpecificOutput", "permissionDecisionReason")
		if field(m, "hookSpecificOutput", "permissionDecision") != "deny" || !strings.Contains(reason, "no answer within 2s") || !strings.Contains(reason, "blocked") {
			t.Fatalf("%v", m)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("took %s: the server's 2 s wait was not used", time.Since(start))
		}
	})
	t.Run("gemini write: ask after the server's wait, deny with --no-ask", func(t *testing.T) {
		ev := agentEvent(t, map[string]any{"session_id": "g1", "cwd": "/home/r/proj", "hook_event_name": "BeforeTool",
			"timestamp": "2026-11-23T20:00:00Z", "tool_name": "write_file", "tool_input": map[string]any{"file_path": "a.txt", "content": "x"}})
		if m := run(t, ev, "gemini"); m["decision"] != "ask" || !strings.Contains(field(m, "reason"), "no answer within 2s") {
			t.Fatalf("%v", m)
		}
		if m := run(t, ev, "gemini", "--no-ask"); m["decision"] != "deny" {
			t.Fatalf("--no-ask: %v", m)
		}
	})
	t.Run("--wait only shortens the server's wait", func(t *testing.T) {
		ev := agentEvent(t, map[string]any{"session_id": "g2", "cwd": "/home/r/proj", "hook_event_name": "BeforeTool",
			"tool_name": "write_file", "tool_input": map[string]any{"file_path": "b.txt", "content": "x"}})
		if m := run(t, ev, "gemini", "--wait", "1s"); !strings.Contains(field(m, "reason"), "no answer within 1s") {
			t.Fatalf("--wait 1s: %v", m)
		}
		if m := run(t, ev, "gemini", "--wait", "1h"); !strings.Contains(field(m, "reason"), "no answer within 2s") {
			t.Fatalf("--wait 1h: %v", m)
		}
	})
	t.Run("gemini mapped MCP tool allowed", func(t *testing.T) {
		ev := agentEvent(t, map[string]any{"session_id": "g1", "cwd": "/home/r/proj", "hook_event_name": "BeforeTool",
			"tool_name": "mcp_acme_summarize", "tool_input": map[string]any{"text": "x"}})
		if m := run(t, ev, "gemini"); m["decision"] != "allow" {
			t.Fatalf("%v", m)
		}
	})
	t.Run("cursor read of a key denied, content never sent", func(t *testing.T) {
		ev := `{"conversation_id":"c","generation_id":"g","hook_event_name":"beforeReadFile","workspace_roots":["/home/r/proj"],
			"file_path":"/home/r/.ssh/id_rsa","content":"SECRET-KEY-MATERIAL"}`
		m := run(t, ev, "cursor")
		if m["permission"] != "deny" || !strings.Contains(field(m, "agent_message"), "forbidden path .ssh") {
			t.Fatalf("%v", m)
		}
	})
	t.Run("cursor unknown MCP tool denied by the server's unknown_tool", func(t *testing.T) {
		ev := `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","workspace_roots":["/home/r/proj"],
			"tool_name":"create_issue","tool_input":"{\"title\":\"x\"}","command":"npx gh-mcp"}`
		if m := run(t, ev, "cursor"); m["permission"] != "deny" || !strings.Contains(field(m, "user_message"), "hooks.cursor.tools") {
			t.Fatalf("%v", m)
		}
	})
	t.Run("cursor shell allowed by rule", func(t *testing.T) {
		ev := `{"conversation_id":"c","hook_event_name":"beforeShellExecution","workspace_roots":["/home/r/proj"],"command":"git status","cwd":"/home/r/proj"}`
		if m := run(t, ev, "cursor"); m["permission"] != "allow" {
			t.Fatalf("%v", m)
		}
	})
}

// TestAgentHooks_FailSafe: a bad event, an unreachable gateway or a bad
// token never becomes an allow, in any agent's format.
func TestAgentHooks_FailSafe(t *testing.T) {
	g := startLive(t, agentHookSettings)
	shell := map[string]string{
		"codex":    codexPre(t, "s", "f1", "Bash", map[string]any{"command": "ls"}),
		"gemini":   `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		"cursor":   `{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":"ls","cwd":"/p"}`,
		"copilot":  `{"sessionId":"s","timestamp":1,"cwd":"/p","toolName":"bash","toolArgs":{"command":"ls"}}`,
		"qwen":     `{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`,
		"opencode": `{"hook_event_name":"tool.execute.before","tool":"bash","sessionID":"s","callID":"c","directory":"/p","args":{"command":"ls"}}`,
	}
	verdict := func(name string, m map[string]any) string {
		switch name {
		case "codex":
			return field(m, "hookSpecificOutput", "permissionDecision")
		case "gemini", "opencode":
			return field(m, "decision")
		case "copilot":
			return field(m, "permissionDecision")
		case "qwen":
			return field(m, "hookSpecificOutput", "permissionDecision")
		}
		return field(m, "permission")
	}
	// The agents that run a tool whose hook gives no verdict get a deny.
	want := map[string]string{"codex": "deny", "gemini": "ask", "cursor": "ask", "copilot": "deny", "qwen": "deny", "opencode": "deny"}
	for name, ev := range shell {
		for _, tc := range []struct {
			what  string
			env   func(string) string
			event string
		}{
			{"unreachable", agentEnv(t, closedURL(t)), ev},
			{"bad token", agentEnv(t, g.URL, "GATEWAY_TOKEN", "nope"), ev},
			{"no token", agentEnv(t, g.URL, "GATEWAY_TOKEN", ""), ev},
			{"not json", agentEnv(t, g.URL), "{"},
			{"empty", agentEnv(t, g.URL), ""},
		} {
			t.Run(name+" "+tc.what, func(t *testing.T) {
				r := runCLI(context.Background(), tc.env, tc.event, "hook", name)
				m := answer(t, r)
				if got := verdict(name, m); got != want[name] {
					t.Fatalf("%s, want %s: %v", got, want[name], m)
				}
				if r.stderr == "" {
					t.Error("nothing said on stderr")
				}
				if r.code != exitOK {
					t.Errorf("exit %d: Qwen Code runs a tool whose hook exits 1", r.code)
				}
			})
		}
	}
}
