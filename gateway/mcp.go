package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/mcpserver"
)

// mcpHandler serves the MCP tools (package mcpserver) over streamable
// HTTP at /mcp, for agents with a token. Each tool call is made as the
// agent whose token it carries, through the agent API itself, in process
// (api is the route mux): the same validation, rate limits, call_id rules
// and answers as POST /v1/requests, /v1/check and /v1/hooks/claude-code,
// with no second code path to keep in step.
func (s *Server) mcpHandler(api http.Handler) http.Handler {
	s.mcp = mcpserver.New(mcpserver.Options{
		Backend: func(ctx context.Context, req *mcp.CallToolRequest) (mcpserver.Backend, error) {
			c, err := inProcessClient(api, req)
			if err != nil {
				return nil, err
			}
			return mcpBackend{c, s}, nil
		},
	})
	// Tool calls run outside the HTTP handler that carried them; count
	// them so a shutdown waits for their withdrawals (see DrainMCP).
	s.mcp.AddReceivingMiddleware(s.countMCPCalls, s.traceMCPCalls)
	return s.endOnRevoke(mcpserver.HTTPHandler(s.mcp, s.mcpVerify, s.log))
}

// countMCPCalls counts the tool calls in flight, for DrainMCP.
func (s *Server) countMCPCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			s.mcpCalls.Add(1)
			defer s.mcpCalls.Done()
		}
		return next(ctx, method, req)
	}
}

// mcpVerify names the agent of an MCP bearer token ("" = none).
func (s *Server) mcpVerify(tok string) string {
	if a := s.AgentByToken(tok); a != nil {
		return a.ID
	}
	// A child token (a sub-agent's) acts as its root agent here too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a, err := s.childAgent(ctx, tok); err == nil && a != nil {
		return a.ID
	}
	return ""
}

// endOnRevoke ends an MCP HTTP exchange made with a child token (a tool
// call's wait, the session's open stream) once the token is revoked or
// expired (see tokenGone); the next call is refused 401.
func (s *Server) endOnRevoke(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if s.AgentByToken(tok) == nil {
			if a, err := s.childAgent(r.Context(), tok); err == nil && a != nil {
				ctx, _, stop := s.untilTokenGone(r.Context(), a)
				defer stop()
				r = r.WithContext(ctx)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// DrainMCP waits until the MCP tool calls in flight have ended (after
// Shutdown, they end at once, withdrawing what they waited for), or ctx
// is done. Call it after the HTTP server has shut down.
func (s *Server) DrainMCP(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.mcpCalls.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// mcpBackend is a client of the in-process API whose waits end when the
// server begins shutting down (the tool then withdraws its request).
// inProcessClient is the Go client over the in-process API (api), as the
// agent whose token the MCP call carries.
func inProcessClient(api http.Handler, req mcp.Request) (*client.Client, error) {
	tok := mcpserver.Token(req)
	if tok == "" {
		return nil, errors.New("no agent token on the call")
	}
	return &client.Client{BaseURL: "http://gateway.in-process", Token: tok,
		HTTPClient: &http.Client{Transport: inProcess{api}}}, nil
}

type mcpBackend struct {
	c *client.Client
	s *Server
}

func (b mcpBackend) Request(ctx context.Context, r client.Req, wait time.Duration) (client.Request, error) {
	ctx, stop := b.s.untilShutdown(ctx)
	defer stop()
	return b.c.Request(ctx, r, wait)
}

func (b mcpBackend) Get(ctx context.Context, id string, wait time.Duration) (client.Request, error) {
	ctx, stop := b.s.untilShutdown(ctx)
	defer stop()
	return b.c.Get(ctx, id, wait)
}

func (b mcpBackend) Cancel(ctx context.Context, id string) (client.Request, error) {
	return b.c.Cancel(ctx, id)
}

func (b mcpBackend) Capabilities(ctx context.Context, includeBlocked bool) ([]client.Capability, error) {
	return b.c.Capabilities(ctx, includeBlocked)
}

func (b mcpBackend) Check(ctx context.Context, r client.Req) (client.CheckResult, error) {
	return b.c.Check(ctx, r)
}

func (b mcpBackend) Hook(ctx context.Context, agent string, event []byte, wait time.Duration) ([]byte, error) {
	return b.c.Hook(ctx, agent, event, wait) // the hook endpoint ends its own wait on shutdown
}

// inProcess is an http.RoundTripper that serves each request with h in
// the calling goroutine, buffering the answer: no socket, no second
// authentication path (the agent's own token goes in the header).
type inProcess struct{ h http.Handler }

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	in := r.Clone(r.Context())
	in.RequestURI = r.URL.RequestURI()
	in.RemoteAddr = "in-process"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := &bufferedWriter{header: http.Header{}}
	t.h.ServeHTTP(w, in)
	if err := r.Context().Err(); err != nil && w.status == 0 {
		return nil, err // the caller gave up and the handler answered nothing
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: r,
	}, nil
}

// bufferedWriter is the http.ResponseWriter of an in-process call.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.header }

func (w *bufferedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
