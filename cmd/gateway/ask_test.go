package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

func TestAsk_AllowedByPolicy(t *testing.T) {
	g := startLive(t, nil)
	r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--capability", "llm:local", "--intent", "summarize", "--json")
	if r.code != exitOK {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &obj); err != nil {
		t.Fatalf("--json printed %q: %v", r.stdout, err)
	}
	for _, k := range []string{"id", "call_id", "status", "decision", "outcome", "reason", "blocked_by", "vaglio",
		"capability", "target", "autonomy", "channel", "sender_id", "decided_by", "decided_at", "created_at",
		"expires_at", "grant_id", "note", "trace"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("--json object lacks %q", k)
		}
	}
	if obj["status"] != "allowed" || !strings.Contains(r.stderr, "allowed") {
		t.Fatalf("stdout %s stderr %q", r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, liveAgentToken) {
		t.Fatal("the token was printed")
	}
}

func TestAsk_AllowedByPerson(t *testing.T) {
	g := startLive(t, nil)
	events := g.adminEvents(t)
	done := runAsync(agentEnv(t, g.URL), "", "ask", "--capability", "fs:write", "--target", "/srv/app/x",
		"--intent", "write the report", "--executor", "report_writer", "--call-id", "c-1")
	e := nextRequired(t, events)
	if e.Capability != "fs:write" || e.Target != "/srv/app/x" || e.CallID != "c-1" {
		t.Fatalf("event %+v", e)
	}
	if _, err := g.Admin.Decide(context.Background(), e.ID, client.AllowAlways); err != nil {
		t.Fatal(err)
	}
	r := result(t, done)
	if r.code != exitOK || !strings.Contains(r.stderr, "allowed always by api:admin (grant ") || r.stdout != "" {
		t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestAsk_Denied(t *testing.T) {
	t.Run("by the guard", func(t *testing.T) {
		g := startLive(t, nil)
		r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--capability", "fs:read", "--target", "~/.ssh/id_rsa")
		if r.code != exitFail || !strings.Contains(r.stderr, "denied by the guard: forbidden path .ssh in target (request ") {
			t.Fatalf("exit %d stderr %q", r.code, r.stderr)
		}
	})
	t.Run("by policy", func(t *testing.T) {
		g := startLive(t, nil)
		r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--capability", "fs:write", "--target", "/x", "--autonomy", "ReadOnly")
		if r.code != exitFail || !strings.Contains(r.stderr, "denied") {
			t.Fatalf("exit %d stderr %q", r.code, r.stderr)
		}
	})
	t.Run("by a person", func(t *testing.T) {
		g := startLive(t, nil)
		events := g.adminEvents(t)
		done := runAsync(agentEnv(t, g.URL), "", "ask", "--capability", "code:exec", "--target", "rm -rf build", "--json")
		e := nextRequired(t, events)
		if _, err := g.Admin.Decide(context.Background(), e.ID, client.Deny); err != nil {
			t.Fatal(err)
		}
		r := result(t, done)
		if r.code != exitFail || !strings.Contains(r.stderr, "denied by api:admin") || !strings.Contains(r.stdout, `"status":"denied"`) {
			t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// TestAsk_Expired: the request's own timeout passes on the gateway's clock
// while ask waits.
func TestAsk_Expired(t *testing.T) {
	g := startLive(t, nil)
	events := g.adminEvents(t)
	done := runAsync(agentEnv(t, g.URL), "", "ask", "--capability", "fs:write", "--target", "/srv/x", "--timeout", "30s", "--wait", "1m")
	e := nextRequired(t, events)
	g.clock.Add(31 * time.Second)
	if n, err := g.App.Service.ExpireDue(context.Background()); err != nil || n != 1 {
		t.Fatalf("ExpireDue: %d, %v", n, err)
	}
	r := result(t, done)
	if r.code != exitFail || !strings.Contains(r.stderr, "expired") || !strings.Contains(r.stderr, e.ID) {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

// TestAsk_NoAnswerInTime: --wait runs out first; the request is withdrawn.
func TestAsk_NoAnswerInTime(t *testing.T) {
	g := startLive(t, nil)
	r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--capability", "fs:write", "--target", "/srv/x", "--wait", "1s", "--json")
	if r.code != exitFail || !strings.Contains(r.stderr, "still pending after 1s; request withdrawn") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	var req client.Request
	if err := json.Unmarshal([]byte(r.stdout), &req); err != nil || req.Status != client.StatusCancelled {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	got, err := g.Admin.Get(context.Background(), req.ID, 0)
	if err != nil || got.Status != client.StatusCancelled {
		t.Fatalf("on the gateway: %+v, %v", got, err)
	}
}

func TestAsk_Errors(t *testing.T) {
	g := startLive(t, nil)
	cases := []struct {
		name   string
		env    func(string) string
		args   []string
		stderr string
	}{
		{"unreachable", agentEnv(t, closedURL(t)), []string{"--capability", "llm:local"}, "gateway unreachable"},
		{"no url", agentEnv(t, "", "GATEWAY_URL", ""), []string{"--capability", "llm:local"}, "GATEWAY_URL is not set"},
		{"no token", agentEnv(t, g.URL, "GATEWAY_TOKEN", ""), []string{"--capability", "llm:local"}, "GATEWAY_TOKEN is not set"},
		{"bad token", agentEnv(t, g.URL, "GATEWAY_TOKEN", "nope"), []string{"--capability", "llm:local"}, "unauthorized"},
		{"no capability", agentEnv(t, g.URL), []string{"--target", "/x"}, "--capability is required"},
		{"unknown capability", agentEnv(t, g.URL), []string{"--capability", "fs:nope", "--target", "/x"}, "unknown capability"},
		{"no target", agentEnv(t, g.URL), []string{"--capability", "fs:write"}, "needs a target"},
		{"bad flag", agentEnv(t, g.URL), []string{"--capability", "llm:local", "--nope"}, "nope"},
		{"positional", agentEnv(t, g.URL), []string{"--capability", "llm:local", "extra"}, `unexpected argument "extra"`},
		{"bad url", agentEnv(t, "ftp://x"), []string{"--capability", "llm:local"}, "not an http(s) URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(context.Background(), tc.env, "", append([]string{"ask"}, tc.args...)...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d stderr %q, want 2 and %q", r.code, r.stderr, tc.stderr)
			}
			if strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Fatalf("stderr is more than one line: %q", r.stderr)
			}
			if strings.Contains(r.stderr, liveAgentToken) {
				t.Fatal("the token was printed")
			}
		})
	}
}

func TestAsk_URLFromConfig(t *testing.T) {
	g := startLive(t, nil)
	dir := t.TempDir()
	file := dir + "/gateway.toml"
	writeFile(t, file, "[server]\nlisten = \""+strings.TrimPrefix(g.URL, "http://")+"\"\n")
	r := runCLI(context.Background(), agentEnv(t, "", "GATEWAY_URL", ""), "", "ask", "--config", file, "--capability", "llm:local")
	if r.code != exitOK {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestStatusLine(t *testing.T) {
	exp := time.Date(2026, 3, 1, 13, 12, 0, 0, time.UTC)
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Fatal(err)
	}
	l := locale.New(locale.English, rome, func() time.Time { return exp.Add(-9*time.Minute - 20*time.Second) })
	got := statusLine(client.Request{Capability: "fs:write", Target: "/x", ExpiresAt: exp}, 80*time.Second+300*time.Millisecond, l)
	if got != "waiting for approval of fs:write /x (expires in 9 min, 14:12 CET)… 1m20s" {
		t.Fatalf("got %q", got)
	}
	long := statusLine(client.Request{Capability: "code:exec", Target: strings.Repeat("a", 100) + "\nb"}, 0, l)
	if len([]rune(long)) > 110 || strings.Contains(long, "\n") {
		t.Fatalf("long target not shortened: %q", long)
	}
}

// TestAsk_List: `gateway ask --list` prints what the agent may use, one
// JSON line per capability; --include-blocked adds the denied ones.
func TestAsk_List(t *testing.T) {
	g := startLive(t, func(cfg *config.Config) {
		cfg.Agents[0].DenyCapabilities = []string{"mail:send"}
	})
	lines := func(out string) map[string]client.Capability {
		m := map[string]client.Capability{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			var c client.Capability
			if err := json.Unmarshal([]byte(l), &c); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			m[c.Name] = c
		}
		return m
	}
	r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--list")
	if r.code != exitOK {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	got := lines(r.stdout)
	if len(got) != 12 || got["fs:write"].Outcome != "approval_required" || got["llm:local"].Outcome != "allowed" ||
		got["fs:write"].TargetKind != "path_glob" || !got["fs:write"].Critical {
		t.Errorf("--list: %v", got)
	}
	if _, ok := got["mail:send"]; ok {
		t.Error("mail:send listed although denied to the agent")
	}
	r = runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--list", "--include-blocked")
	if got := lines(r.stdout); r.code != exitOK || len(got) != 13 || got["mail:send"].Outcome != "denied" {
		t.Errorf("--list --include-blocked: %d %v", r.code, got)
	}
	if r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--list", "--capability", "fs:read"); r.code != exitUsage {
		t.Errorf("--list with --capability: exit %d", r.code)
	}
	// The Go client says the same.
	caps, err := client.New(g.URL, liveAgentToken).Capabilities(context.Background(), false)
	if err != nil || len(caps) != 12 {
		t.Errorf("client.Capabilities: %d %v", len(caps), err)
	}
}

// TestAsk_ListRestrict: for an agent in restrict mode `gateway ask --list`
// says denied where a person would have been asked, and leaves those out
// unless --include-blocked.
func TestAsk_ListRestrict(t *testing.T) {
	g := startLive(t, func(cfg *config.Config) {
		cfg.Agents[0].Mode = policy.ModeRestrict
	})
	r := runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--list", "--include-blocked")
	if r.code != exitOK {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 13 {
		t.Fatalf("%d lines: %q", len(lines), r.stdout)
	}
	for _, l := range lines {
		var c client.Capability
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		cp, _ := policy.Lookup(c.Name)
		want := policy.ModeRestrict.Apply(policy.TableOutcome(policy.Supervised, cp))
		if string(c.Outcome) != string(want) {
			t.Errorf("%s: %s, want %s", c.Name, c.Outcome, want)
		}
	}
	r = runCLI(context.Background(), agentEnv(t, g.URL), "", "ask", "--list")
	if n := len(strings.Split(strings.TrimSpace(r.stdout), "\n")); r.code != exitOK || n != 4 {
		t.Errorf("--list in restrict mode: exit %d, %d lines (want the 4 allowed): %q", r.code, n, r.stdout)
	}
}
