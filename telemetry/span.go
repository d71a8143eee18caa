package telemetry

import (
	"context"
	"encoding/hex"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span the gateway makes.
const ScopeName = "github.com/metnos/gateway"

// Key is an attribute key a span may carry. The keys are a closed set,
// declared here: what a span says is limited to names and outcomes
// (agent, capability, messenger, decision…), never a target, an argument
// value, an intent, a reason or an error's text, which may all hold what
// an agent was given (a path, a command line with a token in it) or a
// secret (a bot token in a failed call's URL).
type Key struct{ name string }

// The keys. Their values are ids, names from the config or the registry,
// and enumerations.
var (
	KeyRequestID  = Key{"gateway.request_id"}
	KeyAgent      = Key{"gateway.agent"}
	KeyCapability = Key{"gateway.capability"}
	KeyOutcome    = Key{"gateway.outcome"}
	KeyStatus     = Key{"gateway.status"}
	KeyBlockedBy  = Key{"gateway.blocked_by"}
	KeyLayers     = Key{"gateway.layers"}
	KeyMessenger  = Key{"gateway.messenger"}
	KeyDecision   = Key{"gateway.decision"}
	KeyDecidedBy  = Key{"gateway.decided_by_channel"}
	KeyJudgeKind  = Key{"gateway.judge.kind"}
	KeyJudgeScore = Key{"gateway.judge.score"}
	KeyAttempt    = Key{"gateway.attempt"}
	KeyHook       = Key{"gateway.hook"}
	KeyTool       = Key{"gateway.mcp.tool"} // a tool the MCP server has (set once the call was taken)
	KeyHTTPStatus = Key{"http.response.status_code"}
)

// Span is one span of a request's trace, or nothing: the zero Span (no
// trace in the context, or telemetry off) does nothing and costs nothing,
// so instrumented code needs no second path for "off".
type Span struct{ s trace.Span }

// Start starts a child of the span ctx carries, when that span records
// (telemetry is on and the request is traced); otherwise it returns ctx
// and the zero Span without allocating.
func Start(ctx context.Context, name string) (context.Context, Span) {
	if !everOn.Load() {
		return ctx, Span{}
	}
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, s := parent.TracerProvider().Tracer(ScopeName).Start(ctx, name)
	return ctx, Span{s}
}

// SpanOf is the span ctx carries, as a Span: the zero Span when it carries
// none that records.
func SpanOf(ctx context.Context) Span {
	if !everOn.Load() {
		return Span{}
	}
	s := trace.SpanFromContext(ctx)
	if !s.IsRecording() {
		return Span{}
	}
	return Span{s}
}

// Recording reports whether the span records: the guard for work done
// only to describe it (an event with several attributes).
func (s Span) Recording() bool { return s.s != nil }

// End ends the span.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// EndAt ends the span at t (a span recorded after the fact: the wait).
func (s Span) EndAt(t time.Time) {
	if s.s != nil {
		s.s.End(trace.WithTimestamp(t))
	}
}

// String sets a string attribute.
func (s Span) String(k Key, v string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(k.name, v))
	}
}

// Int sets an integer attribute.
func (s Span) Int(k Key, v int) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int(k.name, v))
	}
}

// Float sets a number attribute.
func (s Span) Float(k Key, v float64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Float64(k.name, v))
	}
}

// Attr is one attribute: a Key and its value.
type Attr struct{ kv attribute.KeyValue }

// StringAttr is the attribute k = v.
func StringAttr(k Key, v string) Attr { return Attr{attribute.String(k.name, v)} }

// Set sets attributes, in one update of the span: what several calls of
// String would do, for one allocation.
func (s Span) Set(attrs ...Attr) {
	if s.s == nil || len(attrs) == 0 {
		return
	}
	kvs := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		kvs[i] = a.kv
	}
	s.s.SetAttributes(kvs...)
}

// Event adds an event with one attribute per pair of keys and values.
func (s Span) Event(name string, k1 Key, v1 string, k2 Key, v2 string) {
	if s.s != nil {
		s.s.AddEvent(name, trace.WithAttributes(attribute.String(k1.name, v1), attribute.String(k2.name, v2)))
	}
}

// Fail marks the span failed with what, a fixed description chosen by
// the caller: never an error's text (see Key).
func (s Span) Fail(what string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, what)
	}
}

// Traceparent is the W3C traceparent of the span ctx carries, "" when
// it carries none that records: what a request keeps so that the spans
// of its later life (its cards, the decision, the callback) join its
// trace, on any replica.
func Traceparent(ctx context.Context) string {
	s := trace.SpanFromContext(ctx)
	if !s.IsRecording() {
		return ""
	}
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	// Version 00: "00-" trace id "-" span id "-" flags, in lower-case hex.
	var b [len("00-") + 2*len(tid) + 1 + 2*len(sid) + 1 + 2]byte
	copy(b[:], "00-")
	n := len("00-") + hex.Encode(b[len("00-"):], tid[:])
	b[n] = '-'
	n += 1 + hex.Encode(b[n+1:], sid[:])
	b[n] = '-'
	hex.Encode(b[n+1:], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// Extract returns ctx with the remote span context that a W3C
// traceparent (and tracestate) names, as an agent sends them; ctx as it
// is when traceparent is empty or malformed (a new trace begins).
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		c["tracestate"] = tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, c)
}

// Valid reports whether traceparent is a well-formed W3C traceparent
// with a valid trace and span id.
func Valid(traceparent string) bool {
	return trace.SpanContextFromContext(Extract(context.Background(), traceparent, "")).IsValid()
}
