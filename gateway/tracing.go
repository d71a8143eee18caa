package gateway

import (
	"net/http"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/telemetry"
)

// traced starts the span of an agent's call (name: "request", "hook"),
// in the agent's trace when it sent a W3C traceparent; r carries it. Off,
// r is returned as it is and the span is the zero Span.
func (s *Server) traced(r *http.Request, name string, a *Agent) (*http.Request, telemetry.Span) {
	if s.tel == nil {
		return r, telemetry.Span{}
	}
	ctx, span := s.tel.StartServer(r.Context(), name, r.Header.Get("traceparent"), r.Header.Get("tracestate"))
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
