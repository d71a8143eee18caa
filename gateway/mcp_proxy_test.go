package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// upstreamMCP is a streamable-HTTP MCP server with two tools, read
// (path) and clock, that counts the calls it runs and wants token.
func upstreamMCP(t *testing.T, token string) (url string, runs *atomic.Int32) {
	runs = new(atomic.Int32)
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream"}, nil)
	for _, name := range []string{"read", "clock", "extra"} {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + " ran"}}}, nil, nil
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, runs
}

func mcpProxyGateway(t *testing.T, upstream string) *e2eGateway {
	return startE2E(t, e2eOptions{mutate: func(cfg *config.Config) {
		cfg.Agents[2].DenyCapabilities = []string{"fs:read"} // a2
		cfg.MCP.Servers = []config.MCPServer{
			{Name: "remote", URL: upstream, Token: "up-secret-1", UnknownTool: "ask", Wait: config.Duration(config.DefaultMCPWait), Tools: map[string]config.MCPTool{
				"read":  {Capability: "fs:read", Target: []string{"path"}},
				"clock": {Capability: "time:read"},
			}},
			{Name: "local", UnknownTool: "deny", Wait: config.Duration(config.DefaultMCPWait), Tools: map[string]config.MCPTool{}},
		}
	}})
}

// TestMCPProxy_Endpoints: the tool map for `gateway mcp-proxy` (never how
// the gateway reaches the server), and the errors of /mcp/{name}.
func TestMCPProxy_Endpoints(t *testing.T) {
	url, _ := upstreamMCP(t, "up-secret-1")
	g := mcpProxyGateway(t, url)
	r := g.want(t, http.StatusOK, "GET", "/v1/mcp/servers/remote", tokA1, nil)
	var m struct {
		Name, UnknownTool string
		Tools             map[string]struct {
			Capability string
			Target     []string
		}
	}
	if err := json.Unmarshal(r.Body, &m); err != nil || m.Name != "remote" || m.Tools["read"].Capability != "fs:read" ||
		m.Tools["read"].Target[0] != "path" || strings.Contains(string(r.Body), "up-secret") || strings.Contains(string(r.Body), url) {
		t.Fatalf("map %s (%v)", r.Body, err)
	}
	g.want(t, http.StatusUnauthorized, "GET", "/v1/mcp/servers/remote", "", nil)
	if e := g.want(t, http.StatusNotFound, "GET", "/v1/mcp/servers/nope", tokA1, nil).apiError(t); e.Error.Code != "unknown_mcp_server" {
		t.Errorf("unknown server: %+v", e)
	}
	if e := g.want(t, http.StatusNotFound, "POST", "/mcp/local", tokA1, "{}").apiError(t); e.Error.Code != "unknown_mcp_server" {
		t.Errorf("a server with no command or url: %+v", e)
	}
	if e := g.want(t, http.StatusBadRequest, "POST", "/mcp/remote?include_blocked=maybe", tokA1, "{}").apiError(t); e.Error.Code != "invalid_include_blocked" {
		t.Errorf("include_blocked: %+v", e)
	}
	g.want(t, http.StatusUnauthorized, "POST", "/mcp/remote", "", "{}")
}

// TestMCPProxy_UnmappedToolAsksAPerson: with unknown_tool = "ask", a
// tool the map does not name is a code:exec request on mcp:<server>/<tool>
// that waits for a person; it runs on Allow once.
func TestMCPProxy_UnmappedToolAsksAPerson(t *testing.T) {
	url, runs := upstreamMCP(t, "up-secret-1")
	g := mcpProxyGateway(t, url)
	events := g.openEvents(t, tokA1)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/remote", HTTPClient: &http.Client{Transport: bearerRT{tokA1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "extra", Arguments: map[string]any{"x": 1}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	var req gateway.RequiredEvent
	decodeInto(t, events.nextNamed(t, approvals.EventRequired), &req)
	if req.Capability != "code:exec" || req.Target != "mcp:remote/extra" {
		t.Fatalf("asked %+v", req)
	}
	if runs.Load() != 0 {
		t.Fatal("the tool ran before anyone decided")
	}
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+req.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	if res := <-done; res == nil || res.IsError || runs.Load() != 1 {
		t.Fatalf("after Allow once: %+v, %d runs", res, runs.Load())
	}
}

// TestMCPProxy_ListLeavesOutDenied: a tool whose capability the agent's
// profile denies is not listed (unless include_blocked), and its calls are
// refused without reaching the server.
func TestMCPProxy_ListLeavesOutDenied(t *testing.T) {
	url, runs := upstreamMCP(t, "up-secret-1")
	g := mcpProxyGateway(t, url)
	ctx := context.Background()
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/mcp/remote", []string{"clock", "extra"}},
		{"/mcp/remote?include_blocked=true", []string{"clock", "extra", "read"}},
	} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: g.URL + c.path, HTTPClient: &http.Client{Transport: bearerRT{tokA2}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		if strings.Join(names, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s listed %v, want %v", c.path, names, c.want)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "/srv/notes.txt"}})
		if err != nil || !res.IsError {
			t.Errorf("%s: a denied tool's call: %+v %v", c.path, res, err)
		}
		cs.Close()
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the upstream ran %d calls", n)
	}
}

type bearerRT struct{ tok string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPProxy_URLUpstream: /mcp/{name} in front of a streamable-HTTP
// server (with its own token): a call policy allows runs there, one the
// guard denies never does and comes back as a tool error.
func TestMCPProxy_URLUpstream(t *testing.T) {
	url, runs := upstreamMCP(t, "up-secret-1")
	g := mcpProxyGateway(t, url)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp/remote", HTTPClient: &http.Client{Transport: bearerRT{tokA1}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 3 {
		t.Fatalf("tools/list %+v %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "clock"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "clock ran" {
		t.Fatalf("clock: %+v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{"path": "/srv/x/.ssh/id_ed25519"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "denied") {
		t.Fatalf("guarded read: %+v %v", res, err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the upstream ran %d calls, want 1", n)
	}
}
