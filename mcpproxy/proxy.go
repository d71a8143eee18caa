// Package mcpproxy stands between an MCP client (an agent, a desktop
// assistant, an IDE) and an MCP server, with the official Go SDK on both
// sides: tools/list passes through without the tools policy denies the
// calling agent whatever the target, and every tools/call becomes
// approval requests (the capability and target from the server's tool
// map, [[mcp.servers]] on the gateway) and reaches the server only when
// all are allowed. A refusal is a tool error the model reads.
//
// `gateway mcp-proxy --name NAME -- CMD ARGS…` serves it over stdio on an
// agent's machine (asking the gateway over HTTP); the gateway serves it at
// /mcp/NAME (asking in process). The package knows neither side's wiring.
package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/mcpserver"
)

// Map is one [[mcp.servers]] entry as the proxy reads it (GET
// /v1/mcp/servers/NAME): which requests each tool's calls are.
type Map struct {
	Name string `json:"name"`
	// UnknownTool is "ask" or "deny", for tools Tools does not name.
	UnknownTool string `json:"unknown_tool"`
	// WaitS is how long a call waits for a person, in seconds.
	WaitS float64         `json:"wait_s"`
	Tools map[string]Tool `json:"tools"`
}

// Tool is what one tool's calls are asked as.
type Tool struct {
	Capability string `json:"capability"`
	// Target names the arguments holding the target (none: a capability
	// without one).
	Target []string `json:"target,omitempty"`
}

// Wait is WaitS as a duration.
func (m Map) Wait() time.Duration { return time.Duration(m.WaitS * float64(time.Second)) }

// Backend is how the proxy asks the gateway, as the calling agent.
// *client.Client implements it.
type Backend interface {
	mcpserver.Asker
	Capabilities(ctx context.Context, includeBlocked bool) ([]client.Capability, error)
}

// Options configure New.
type Options struct {
	Map Map
	// Upstream is the session with the server (connected on first use).
	Upstream func(ctx context.Context) (*mcp.ClientSession, error)
	// Backend is the gateway as the agent that made the MCP request.
	Backend func(ctx context.Context, req mcp.Request) (Backend, error)
	// IncludeBlocked lists the tools policy denies too (their calls are
	// still refused).
	IncludeBlocked bool
	// Home is what "~" in a path argument stands for on the server's
	// machine; "" leaves it to the gateway's policy.
	Home    string
	Version string
}

// New returns the MCP server that proxies o.Upstream.
func New(o Options) *mcp.Server {
	if o.Version == "" {
		o.Version = "dev"
	}
	p := &proxy{o: o}
	s := mcp.NewServer(&mcp.Implementation{Name: "gateway-mcp-proxy-" + o.Map.Name, Title: "Approval gateway in front of " + o.Map.Name, Version: o.Version},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return p.list(ctx, req)
			case "tools/call":
				call, ok := req.(*mcp.CallToolRequest)
				if !ok {
					return nil, fmt.Errorf("tools/call: unexpected request %T", req)
				}
				return p.call(ctx, call)
			}
			return next(ctx, method, req)
		}
	})
	return s
}

type proxy struct {
	o     Options
	mu    sync.Mutex
	tools map[string]*mcp.Tool // the server's last tools/list
}

// upstreamTools lists every tool of the server (all pages) and remembers
// them, for the annotations a call is judged and shown with.
func (p *proxy) upstreamTools(ctx context.Context) ([]*mcp.Tool, error) {
	cs, err := p.o.Upstream(ctx)
	if err != nil {
		return nil, fmt.Errorf("the MCP server %s: %w", p.o.Map.Name, err)
	}
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("the MCP server %s: tools/list: %w", p.o.Map.Name, err)
		}
		out = append(out, t)
	}
	byName := make(map[string]*mcp.Tool, len(out))
	for _, t := range out {
		byName[t.Name] = t
	}
	p.mu.Lock()
	p.tools = byName
	p.mu.Unlock()
	return out, nil
}

func (p *proxy) tool(ctx context.Context, name string) (*mcp.Tool, error) {
	p.mu.Lock()
	t, ok := p.tools[name]
	p.mu.Unlock()
	if ok {
		return t, nil
	}
	if _, err := p.upstreamTools(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tools[name], nil
}

// list is tools/list: the server's tools but those the agent may never
// use (see Visible).
func (p *proxy) list(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	tools, err := p.upstreamTools(ctx)
	if err != nil {
		return nil, err
	}
	if p.o.IncludeBlocked {
		return &mcp.ListToolsResult{Tools: tools}, nil
	}
	b, err := p.o.Backend(ctx, req)
	if err != nil {
		return nil, err
	}
	caps, err := b.Capabilities(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("asking the approval gateway what this agent may use: %w", err)
	}
	usable := make(map[string]bool, len(caps))
	for _, c := range caps {
		usable[c.Name] = c.Outcome != "denied"
	}
	return &mcp.ListToolsResult{Tools: p.o.Map.Visible(tools, usable)}, nil
}

// Visible are the tools a call of which could be allowed: a mapped tool
// whose capability the agent may use (usable: GET /v1/capabilities); an
// unmapped one only when unknown_tool asks, the server does not annotate
// it destructive, and the agent may use UnknownCapability.
func (m Map) Visible(tools []*mcp.Tool, usable map[string]bool) []*mcp.Tool {
	out := []*mcp.Tool{}
	for _, t := range tools {
		if mt, ok := m.Tools[t.Name]; ok {
			if usable[mt.Capability] {
				out = append(out, t)
			}
			continue
		}
		if m.UnknownTool == "ask" && !destructive(t) && usable[UnknownCapability] {
			out = append(out, t)
		}
	}
	return out
}

// call is tools/call: its requests, then the server only if all are
// allowed.
func (p *proxy) call(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	if req.Params == nil {
		return nil, errors.New("tools/call: no params")
	}
	name := req.Params.Name
	args := map[string]any{}
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return refused(refusef("the arguments of %s are not a JSON object: %v", name, err)), nil
		}
	}
	tool, err := p.tool(ctx, name)
	if err != nil {
		return nil, err
	}
	sessionID := ""
	if req.Session != nil && req.Session.ID() != "" {
		sessionID = "mcp:" + req.Session.ID()
	}
	reqs, err := p.o.Map.Requests(name, args, tool, p.o.Home, sessionID)
	var rf *refusal
	if errors.As(err, &rf) {
		return refused(rf), nil
	}
	if err != nil {
		return nil, err
	}
	b, err := p.o.Backend(ctx, req)
	if err != nil {
		return nil, err
	}
	wait := p.o.Map.Wait()
	stop := keepAlive(ctx, req)
	defer stop()
	for _, r := range reqs {
		r.Timeout = wait
		got, err := mcpserver.Await(ctx, b, r, wait+2*time.Second) // let the gateway expire it first
		if err != nil {
			return refused(refusef("%s: %v; the call was not made", name, err)), nil
		}
		if !got.Allowed() {
			return refused(refusef("%s", verdict(got))), nil
		}
	}
	cs, err := p.o.Upstream(ctx)
	if err != nil {
		return nil, fmt.Errorf("the MCP server %s: %w", p.o.Map.Name, err)
	}
	// The arguments that were asked about, not the raw bytes: the server
	// gets exactly what the gateway read.
	return cs.CallTool(ctx, &mcp.CallToolParams{Meta: req.Params.Meta, Name: name, Arguments: args})
}

// ProgressEvery is how often a call that waits for a person tells a
// client that asked for progress (a progressToken) that it still waits,
// so a client whose timeout restarts on progress keeps waiting.
const ProgressEvery = 15 * time.Second

// keepAlive sends progress notifications until stop is called.
func keepAlive(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(n),
					Message: "approval gateway: waiting for a person to decide"})
			}
		}
	}()
	return func() { close(done); <-finished }
}

// verdict says why a finished request does not let the call run.
func verdict(r client.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", r.Capability, r.Target, r.Status)
	if r.Reason != "" {
		b.WriteString(" (" + r.Reason + ")")
	}
	if r.Note != "" {
		b.WriteString("; note: " + r.Note)
	}
	fmt.Fprintf(&b, "; request %s. The call was not made.", r.ID)
	return b.String()
}

// refused is the tool error a model reads for a call that was not made.
func refused(r *refusal) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: r.msg}}}
}
