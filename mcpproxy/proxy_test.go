package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
)

var fsMap = Map{Name: "fs", UnknownTool: "ask", WaitS: 60, Tools: map[string]Tool{
	"read":  {Capability: "fs:read", Target: []string{"path"}},
	"many":  {Capability: "fs:read", Target: []string{"paths"}},
	"move":  {Capability: "fs:write", Target: []string{"source", "destination"}},
	"clock": {Capability: "time:read"},
}}

func yes() *bool { b := true; return &b }

func TestRequests(t *testing.T) {
	plain := &mcp.Tool{Name: "plain"}
	wipe := &mcp.Tool{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: yes()}}
	type want struct {
		caps, targets []string
		refused       string
	}
	for _, c := range []struct {
		name string
		tool string
		t    *mcp.Tool
		args map[string]any
		m    Map
		want want
	}{
		{"path", "read", nil, map[string]any{"path": "/srv/a"}, fsMap, want{caps: []string{"fs:read"}, targets: []string{"/srv/a"}}},
		{"home", "read", nil, map[string]any{"path": "~/.ssh/id_rsa"}, fsMap, want{caps: []string{"fs:read"}, targets: []string{"/home/u/.ssh/id_rsa"}}},
		{"relative refused", "read", nil, map[string]any{"path": "../.ssh/id_rsa"}, fsMap, want{refused: "not an absolute path"}},
		{"~user refused", "read", nil, map[string]any{"path": "~root/.ssh"}, fsMap, want{refused: "not an absolute path"}},
		{"missing target", "read", nil, map[string]any{"file": "/x"}, fsMap, want{refused: `argument "path" (the target) is missing`}},
		{"empty target", "read", nil, map[string]any{"path": ""}, fsMap, want{refused: "empty target"}},
		{"number target", "read", nil, map[string]any{"path": 3.0}, fsMap, want{refused: "want a string or a list of strings"}},
		{"list", "many", nil, map[string]any{"paths": []any{"/a", "/b", "/a"}}, fsMap, want{caps: []string{"fs:read", "fs:read"}, targets: []string{"/a", "/b"}}},
		{"list with a number", "many", nil, map[string]any{"paths": []any{"/a", 1.0}}, fsMap, want{refused: "want strings"}},
		{"empty list", "many", nil, map[string]any{"paths": []any{}}, fsMap, want{refused: "is empty"}},
		{"two arguments", "move", nil, map[string]any{"source": "/a", "destination": "/b"}, fsMap, want{caps: []string{"fs:write", "fs:write"}, targets: []string{"/a", "/b"}}},
		{"no target", "clock", nil, map[string]any{}, fsMap, want{caps: []string{"time:read"}, targets: []string{""}}},
		{"unmapped asks", "plain", plain, map[string]any{}, fsMap, want{caps: []string{"code:exec"}, targets: []string{"mcp:fs/plain"}}},
		{"unmapped destructive", "wipe", wipe, map[string]any{}, fsMap, want{refused: "destructiveHint: denied"}},
		{"unmapped denied", "plain", plain, map[string]any{}, Map{Name: "fs", UnknownTool: "deny"}, want{refused: "unknown tools are denied"}},
		{"no such tool", "nope", nil, map[string]any{}, fsMap, want{refused: `has no tool "nope"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs, err := c.m.Requests(c.tool, c.args, c.t, "/home/u", "")
			var rf *refusal
			if c.want.refused != "" {
				if !errors.As(err, &rf) || !strings.Contains(rf.msg, c.want.refused) {
					t.Fatalf("err = %v, want a refusal with %q", err, c.want.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var caps, targets []string
			for _, r := range reqs {
				caps, targets = append(caps, r.Capability), append(targets, r.Target)
				if r.Executor != "mcp:fs" || !strings.Contains(r.Summary, "MCP server fs · tool "+c.tool) {
					t.Errorf("request %+v", r)
				}
			}
			if !slices.Equal(caps, c.want.caps) || !slices.Equal(targets, c.want.targets) {
				t.Errorf("got %v %v, want %v %v", caps, targets, c.want.caps, c.want.targets)
			}
		})
	}
}

func TestSummary(t *testing.T) {
	s := Summary("fs", "write", &mcp.Tool{Annotations: &mcp.ToolAnnotations{DestructiveHint: yes(), IdempotentHint: true}},
		map[string]any{"path": "/a", "content": strings.Repeat("é", 2000)})
	if !strings.HasPrefix(s, `MCP server fs · tool write (destructive, idempotent) · arguments {"content":"é`) ||
		!strings.Contains(s, "… (cut: ") || len(s) > maxSummaryArgs+200 {
		t.Errorf("summary %q", s)
	}
	big := map[string]any{"content": strings.Repeat("x", 100<<10), "path": "/a"}
	g := guardArgs(big)
	if g["path"] != "/a" || len(g["content"].(string)) > maxArgString+64 {
		t.Errorf("guard args not cut: %d bytes", len(g["content"].(string)))
	}
}

func TestVisible(t *testing.T) {
	tools := []*mcp.Tool{{Name: "read"}, {Name: "move"}, {Name: "plain"},
		{Name: "wipe", Annotations: &mcp.ToolAnnotations{DestructiveHint: yes()}}}
	names := func(ts []*mcp.Tool) (out []string) {
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	all := map[string]bool{"fs:read": true, "fs:write": true, "code:exec": true}
	if got := names(fsMap.Visible(tools, all)); !slices.Equal(got, []string{"read", "move", "plain"}) {
		t.Errorf("all usable: %v", got)
	}
	if got := names(fsMap.Visible(tools, map[string]bool{"fs:read": true})); !slices.Equal(got, []string{"read"}) {
		t.Errorf("fs:read only: %v", got)
	}
	deny := fsMap
	deny.UnknownTool = "deny"
	if got := names(deny.Visible(tools, all)); !slices.Equal(got, []string{"read", "move"}) {
		t.Errorf("unknown_tool deny: %v", got)
	}
}

// fakeGateway answers every request with its verdict for the target and
// records what was asked.
type fakeGateway struct {
	mu      sync.Mutex
	allow   map[string]bool
	asked   []client.Req
	blocked []string // capabilities denied whatever the target
}

func (f *fakeGateway) Request(_ context.Context, r client.Req, _ time.Duration) (client.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r)
	st := client.StatusDenied
	if f.allow[r.Target] {
		st = client.StatusAllowed
	}
	return client.Request{ID: "r1", Status: st, Capability: r.Capability, Target: r.Target, Reason: "test"}, nil
}

func (f *fakeGateway) Get(context.Context, string, time.Duration) (client.Request, error) {
	return client.Request{}, errors.New("not pending")
}

func (f *fakeGateway) Cancel(context.Context, string) (client.Request, error) {
	return client.Request{}, errors.New("not pending")
}

func (f *fakeGateway) Capabilities(context.Context, bool) ([]client.Capability, error) {
	var out []client.Capability
	for _, c := range []string{"fs:read", "fs:write", "code:exec", "time:read"} {
		if !slices.Contains(f.blocked, c) {
			out = append(out, client.Capability{Name: c, Outcome: "approval_required"})
		}
	}
	return out, nil
}

// TestProxy_OnlyAllowedCallsReachTheServer: whatever the verdicts, the
// server runs a call only when every request it made was allowed, with
// exactly the arguments asked about; a refusal is a tool error.
func TestProxy_OnlyAllowedCallsReachTheServer(t *testing.T) {
	ctx := context.Background()
	up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
	var mu sync.Mutex
	var ran []string
	for _, name := range []string{"read", "move", "plain"} {
		mcp.AddTool(up, &mcp.Tool{Name: name}, func(_ context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			b, _ := json.Marshal(in)
			ran = append(ran, name+" "+string(b))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil, nil
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := up.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	upc, err := mcp.NewClient(&mcp.Implementation{Name: "proxy"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer upc.Close()
	gw := &fakeGateway{allow: map[string]bool{"/ok": true, "/ok2": true}, blocked: []string{"code:exec"}}
	p := New(Options{Map: fsMap, Upstream: func(context.Context) (*mcp.ClientSession, error) { return upc, nil },
		Backend: func(context.Context, mcp.Request) (Backend, error) { return gw, nil }})
	ps, pc := mcp.NewInMemoryTransports()
	if _, err := p.Connect(ctx, ps, nil); err != nil {
		t.Fatal(err)
	}
	agent, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx, pc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()

	list, err := agent.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"move", "read"}) {
		t.Errorf("tools/list %v: plain is asked as code:exec, which is blocked", names)
	}

	for _, c := range []struct {
		tool string
		args map[string]any
		runs bool
	}{
		{"read", map[string]any{"path": "/ok"}, true},
		{"read", map[string]any{"path": "/no"}, false},
		{"move", map[string]any{"source": "/ok", "destination": "/no"}, false},
		{"move", map[string]any{"source": "/no", "destination": "/ok"}, false},
		{"move", map[string]any{"source": "/ok", "destination": "/ok2"}, true},
		{"read", map[string]any{"path": "ok"}, false},
		{"plain", map[string]any{}, false},
	} {
		mu.Lock()
		before := len(ran)
		mu.Unlock()
		res, err := agent.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s %v: %v", c.tool, c.args, err)
		}
		mu.Lock()
		didRun := len(ran) > before
		mu.Unlock()
		if didRun != c.runs || res.IsError == c.runs {
			t.Errorf("%s %v: ran %v, result %+v", c.tool, c.args, didRun, res)
		}
		if !c.runs {
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.HasPrefix(tc.Text, "approval gateway: ") {
				t.Errorf("refusal %+v", res.Content)
			}
		}
	}
	if want := `read {"path":"/ok"}`; ran[0] != want {
		t.Errorf("the server got %q, want %q", ran[0], want)
	}
}
