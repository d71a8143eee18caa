package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/mcpserver"
)

const (
	tokenA     = "tok-mcp-agent-a"
	tokenB     = "tok-mcp-agent-b"
	tokenAdmin = "tok-mcp-admin"
)

// live is a whole gateway on 127.0.0.1 (hook wait 1s, one approve rule,
// one mapped MCP tool) and its admin client.
type live struct {
	URL    string
	stop   func() // shuts the gateway down and waits until it has
	app    *gateway.App
	Admin  *client.Client
	events <-chan client.Event
}

func startGateway(t *testing.T) *live {
	t.Helper()
	cfg := gatewaytest.Config(t, gatewaytest.Agent("a", tokenA, false), gatewaytest.Agent("b", tokenB, false),
		gatewaytest.Agent("admin", tokenAdmin, true))
	cfg.Hooks["claude-code"].Wait = config.Duration(time.Second)
	cfg.Hooks["claude-code"].Tools = map[string]string{"mcp__acme__summarize": "llm:local"}
	cfg.Policy.Rules = []config.Rule{{Capability: "code:exec", Target: "git status", Action: "approve"}}
	gw := gatewaytest.Start(t, cfg, gateway.AppOptions{Home: "/home/test"})
	g := &live{URL: gw.URL, stop: gw.Stop, app: gw.App}
	g.Admin = client.New(g.URL, tokenAdmin)
	ectx, ecancel := context.WithCancel(context.Background())
	t.Cleanup(ecancel)
	var err error
	if g.events, err = g.Admin.Events(ectx); err != nil {
		t.Fatal(err)
	}
	return g
}

func (g *live) nextPending(t *testing.T) client.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-g.events:
			if e.Kind == client.EventRequired {
				return e
			}
		case <-deadline:
			t.Fatal("no request waited for a person within 10s")
		}
	}
}

// session connects an MCP client to the tools as `gateway mcp` serves
// them (backend: the Go client with agent a's token), in memory.
func session(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	c := client.New(url, tokenA)
	s := mcpserver.New(mcpserver.Options{
		Backend: func(context.Context, *mcp.CallToolRequest) (mcpserver.Backend, error) { return c, nil },
		Cwd:     "/home/test/proj",
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
	return cs
}

func toolCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// request decodes request_approval's structured result.
func request(t *testing.T, res *mcp.CallToolResult) client.Request {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r client.Request
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func prompt(t *testing.T, res *mcp.CallToolResult) mcpserver.PromptAnswer {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text(res)))
	dec.DisallowUnknownFields()
	var a mcpserver.PromptAnswer
	if err := dec.Decode(&a); err != nil || res.IsError {
		t.Fatalf("approval_prompt answered %q: %v", text(res), err)
	}
	if (a.Behavior == "allow") == (a.Message != "") || (a.Behavior != "allow" && a.Behavior != "deny") {
		t.Fatalf("not Claude Code's shape: %+v", a)
	}
	return a
}

func TestRequestApproval_WaitsForPerson(t *testing.T) {
	g := startGateway(t)
	cs := session(t, g.URL)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{
			"capability": "fs:write", "target": "/srv/app/config.yml", "intent": "update the config",
			"grant_target": "/srv/app/*.yml", "timeout": "5m", "call_id": "c-1"}})
		done <- res
	}()
	e := g.nextPending(t)
	if e.Capability != "fs:write" || e.Target != "/srv/app/config.yml" || e.CallID != "c-1" {
		t.Fatalf("asked %+v", e)
	}
	if _, err := g.Admin.Decide(context.Background(), e.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	r := request(t, <-done)
	if r.ID != e.ID || r.Status != client.StatusAllowed || r.Decision != client.AllowOnce || r.Agent != "a" || r.GrantTarget != "/srv/app/*.yml" {
		t.Fatalf("got %+v", r)
	}
}

// TestRequestApproval_NoAnswerExpires: nobody answers within the
// timeout (the shortest there is); the result is final and says expired,
// as docs/agents.md's MCP table does, never pending nor withdrawn.
func TestRequestApproval_NoAnswerExpires(t *testing.T) {
	if mcpserver.MinWait != approvals.MinTimeout {
		t.Fatalf("MinWait %s is not the gateway's shortest request timeout %s", mcpserver.MinWait, approvals.MinTimeout)
	}
	g := startGateway(t)
	r := request(t, toolCall(t, session(t, g.URL), "request_approval", map[string]any{
		"capability": "fs:write", "target": "/srv/app/x.yml", "timeout": "10s"}))
	if r.Status != client.StatusExpired {
		t.Fatalf("got %+v", r)
	}
}

func TestRequestApproval_BadInput(t *testing.T) {
	g := startGateway(t)
	cs := session(t, g.URL)
	for name, args := range map[string]map[string]any{
		"unknown capability":  {"capability": "fs:nope", "target": "/x"},
		"missing target":      {"capability": "fs:write"},
		"bad timeout":         {"capability": "fs:write", "target": "/x", "timeout": "soon"},
		"too short a timeout": {"capability": "fs:write", "target": "/x", "timeout": "5s"},
		"unknown field":       {"capability": "fs:write", "target": "/x", "targte": "/y"},
		"no capability":       {"target": "/x"},
	} {
		t.Run(name, func(t *testing.T) {
			res := toolCall(t, cs, "request_approval", args)
			if !res.IsError || text(res) == "" {
				t.Fatalf("%+v", res)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	g := startGateway(t)
	cs := session(t, g.URL)
	for target, want := range map[string]string{"git status": "allowed", "rm -rf /": "denied", "make deploy": "approval_required"} {
		res := toolCall(t, cs, "check", map[string]any{"capability": "code:exec", "target": target})
		b, _ := json.Marshal(res.StructuredContent)
		var c client.CheckResult
		if err := json.Unmarshal(b, &c); err != nil || res.IsError || c.Outcome != want {
			t.Fatalf("%s: %s (%v)", target, text(res), err)
		}
	}
}

func TestApprovalPrompt(t *testing.T) {
	g := startGateway(t)
	cs := session(t, g.URL)
	cases := []struct {
		name, tool string
		input      map[string]any
		behavior   string
		message    string
	}{
		{"rule approves", "Bash", map[string]any{"command": "git status", "description": "Status"}, "allow", ""},
		{"server's tools map", "mcp__acme__summarize", map[string]any{"text": "notes"}, "allow", ""},
		{"guard", "Read", map[string]any{"file_path": "~/.ssh/id_rsa"}, "deny", "denied by the guard: forbidden path .ssh"},
		{"relative path resolved", "Read", map[string]any{"file_path": "../.ssh/id_rsa"}, "deny", "forbidden path .ssh"},
		{"no mapping", "mcp__github__create_issue", map[string]any{"title": "x"}, "deny", "no capability mapping"},
		{"no answer in time", "Write", map[string]any{"file_path": "/home/test/proj/a.txt", "content": "x"}, "deny", "no answer within 1s"},
		{"bad input", "Bash", map[string]any{}, "deny", "tool_input.command"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := prompt(t, toolCall(t, cs, "approval_prompt", map[string]any{
				"tool_name": tc.tool, "input": tc.input, "tool_use_id": "toolu_" + string(rune('a'+i))}))
			if a.Behavior != tc.behavior || !strings.Contains(a.Message, tc.message) {
				t.Fatalf("%+v", a)
			}
			if a.Behavior == "allow" {
				b1, _ := json.Marshal(a.UpdatedInput)
				b2, _ := json.Marshal(tc.input)
				if !bytes.Equal(b1, b2) {
					t.Fatalf("updatedInput %s, want the input unchanged %s", b1, b2)
				}
			}
		})
	}
}

func TestApprovalPrompt_PersonDecides(t *testing.T) {
	g := startGateway(t)
	// The server waits 1 s; a person quicker than that is relayed.
	cs := session(t, g.URL)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "approval_prompt", Arguments: map[string]any{
			"tool_name": "Edit", "input": map[string]any{"file_path": "main.go", "old_string": "a", "new_string": "b"}, "tool_use_id": "toolu_e"}})
		done <- res
	}()
	e := g.nextPending(t)
	if e.Capability != "fs:write" || e.Target != "/home/test/proj/main.go" {
		t.Fatalf("asked %+v", e)
	}
	if _, err := g.Admin.Decide(context.Background(), e.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	if a := prompt(t, <-done); a.Behavior != "deny" || !strings.Contains(a.Message, "denied by api:admin") {
		t.Fatalf("%+v", a)
	}
}

func TestApprovalPrompt_GatewayUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	a := prompt(t, toolCall(t, session(t, url), "approval_prompt", map[string]any{
		"tool_name": "Bash", "input": map[string]any{"command": "ls"}}))
	if a.Behavior != "deny" || !strings.Contains(a.Message, "unreachable") {
		t.Fatalf("%+v", a)
	}
}

// bearer adds an agent's token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects to the gateway's /mcp with a token.
func httpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestHTTP_ActsAsCaller: over /mcp each agent's calls are its own
// requests.
func TestHTTP_ActsAsCaller(t *testing.T) {
	g := startGateway(t)
	for tok, agent := range map[string]string{tokenA: "a", tokenB: "b"} {
		r := request(t, toolCall(t, httpSession(t, g.URL, tok), "request_approval", map[string]any{"capability": "llm:local", "call_id": "same"}))
		if r.Agent != agent || r.Status != client.StatusAllowed {
			t.Fatalf("%s: %+v", agent, r)
		}
	}
	a := prompt(t, toolCall(t, httpSession(t, g.URL, tokenA), "approval_prompt", map[string]any{
		"tool_name": "Read", "input": map[string]any{"file_path": "/home/test/.ssh/id_rsa"}}))
	if a.Behavior != "deny" || !strings.Contains(a.Message, "forbidden path .ssh") {
		t.Fatalf("%+v", a)
	}
}

// TestHTTP_Auth: no token or a bad one is 401; a session opened by one
// agent cannot be used with another agent's token.
func TestHTTP_Auth(t *testing.T) {
	g := startGateway(t)
	post := func(token, session string, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, g.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	for _, tok := range []string{"", "nope"} {
		if resp := post(tok, "", initialize); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: %s", tok, resp.Status)
		}
	}
	resp := post(tokenA, "", initialize)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, sid)
	}
	if resp := post(tokenB, sid, list); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another agent's token on the session: %s", resp.Status)
	}
	if resp := post(tokenA, sid, list); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session's own agent: %s", resp.Status)
	}
}

// TestHTTP_Shutdown: a gateway with an open MCP session (its event
// stream) and a tool call waiting for a person shuts down at once; the
// waiting request is withdrawn.
func TestHTTP_Shutdown(t *testing.T) {
	g := startGateway(t)
	cs := httpSession(t, g.URL, tokenA)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: map[string]any{
			"capability": "fs:write", "target": "/srv/x", "timeout": "5m"}})
		done <- res
	}()
	e := g.nextPending(t)
	stopped := make(chan struct{})
	go func() { g.stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second): // the server's own shutdown deadline is 15 s
		t.Fatal("the gateway did not shut down with an MCP session open")
	}
	<-done // the session ended with the server: no result, or the withdrawn request
	list, err := g.app.Service.ListRecent(context.Background(), 10)
	if err != nil || len(list) != 1 || list[0].ID != e.ID || list[0].Status != "cancelled" {
		t.Fatalf("requests %+v, %v", list, err)
	}
}
