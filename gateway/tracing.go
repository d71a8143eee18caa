package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/mcpserver"
	"github.com/metnos/gateway/telemetry"
)

// The W3C trace context headers, as net/http keys them: looked up by
// another spelling, each lookup allocates the canonical key anew.
const (
	hdrTraceparent = "Traceparent"
	hdrTracestate  = "Tracestate"
)

// traced starts the span of an agent's call (name: "request", "hook"),
// in the agent's trace when it sent a W3C traceparent; r carries it. Off,
// r is returned as it is and the span is the zero Span.
func (s *Server) traced(r *http.Request, name string, a *Agent) (*http.Request, telemetry.Span) {
	if s.tel == nil {
		return r, telemetry.Span{}
	}
	ctx, span := s.tel.StartServer(r.Context(), name, r.Header.Get(hdrTraceparent), r.Header.Get(hdrTracestate))
	span.String(telemetry.KeyAgent, a.ID)
	return r.WithContext(ctx), span
}

// traceRequest says on span which request an agent's call became and
// where it stands: its id, capability, outcome and status.
func traceRequest(span telemetry.Span, req *approvals.Request) {
	if !span.Recording() {
		return
	}
	span.Set(telemetry.StringAttr(telemetry.KeyRequestID, req.ID), telemetry.StringAttr(telemetry.KeyCapability, req.Capability),
		telemetry.StringAttr(telemetry.KeyOutcome, string(req.Outcome)), telemetry.StringAttr(telemetry.KeyStatus, string(req.Status)))
}

// tracedIfAsked is traced for a dry run (POST /v1/check): its span is
// started only when the agent sent a traceparent, or the call is part of
// a traced one (an MCP tool call's, in process), and records only when
// that trace is sampled (the sampler follows its parent). A check stores
// nothing and is the hot path of an agent that asks before it acts:
// tracing each one would cost more than the 10 % telemetry may add to
// it (docs/telemetry.md), so it is traced when the agent traces it.
func (s *Server) tracedIfAsked(r *http.Request, name string, a *Agent) (*http.Request, telemetry.Span) {
	if s.tel == nil || r.Header.Get(hdrTraceparent) == "" && !telemetry.SpanOf(r.Context()).Recording() {
		return r, telemetry.Span{}
	}
	return s.traced(r, name, a)
}

// traceMCPCalls starts the span of each MCP tool call (mcp.tool), in the
// agent's trace when the call carries one: params._meta.traceparent (and
// tracestate), as MCP passes a trace, else the HTTP request's W3C
// headers. What the call asks of the API in process (its request, check
// or hook) is a child of it.
func (s *Server) traceMCPCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.tel == nil || method != "tools/call" {
			return next(ctx, method, req)
		}
		tp, ts, tool := mcpCall(req)
		ctx, span := s.tel.StartServer(ctx, "mcp.tool", tp, ts)
		defer span.End()
		if a := s.AgentByToken(mcpserver.Token(req)); a != nil {
			span.String(telemetry.KeyAgent, a.ID)
		}
		res, err := next(ctx, method, req)
		if err != nil {
			// Not a tool of this server, or a call it could not take: the
			// name the agent sent is not said.
			span.Fail("tool call not taken")
			return res, err
		}
		span.String(telemetry.KeyTool, tool)
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			span.Fail("tool call refused")
		}
		return res, err
	}
}

// mcpCall is a tool call's trace, from its _meta or else its HTTP
// headers, and the tool's name.
func mcpCall(req mcp.Request) (traceparent, tracestate, tool string) {
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		tool = p.Name
		traceparent, _ = p.Meta["traceparent"].(string)
		tracestate, _ = p.Meta["tracestate"].(string)
	}
	if traceparent == "" {
		if extra := req.GetExtra(); extra != nil && extra.Header != nil {
			traceparent, tracestate = extra.Header.Get(hdrTraceparent), extra.Header.Get(hdrTracestate)
		}
	}
	return traceparent, tracestate, tool
}
