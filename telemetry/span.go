package telemetry

import (
	"context"
	"math"
	"sync"
	"time"
)

// ScopeName is the instrumentation scope of every span the gateway makes.
const ScopeName = "github.com/metnos/gateway"

// Key is an attribute key a span may carry. The keys are a closed set,
// declared here: what a span says is limited to names and outcomes
// (agent, capability, messenger, decision…), never a target, an argument
// value, an intent, a reason or an error's text, which may all hold what
// an agent was given (a path, a command line with a token in it) or a
// secret (a bot token in a failed call's URL).
type Key struct{ id uint8 }

// The keys. Their values are ids, names from the config or the registry,
// and enumerations.
var (
	KeyRequestID  = Key{keyRequestID}
	KeyAgent      = Key{keyAgent}
	KeyCapability = Key{keyCapability}
	KeyOutcome    = Key{keyOutcome}
	KeyStatus     = Key{keyStatus}
	KeyBlockedBy  = Key{keyBlockedBy}
	KeyLayers     = Key{keyLayers}
	KeyMessenger  = Key{keyMessenger}
	KeyDecision   = Key{keyDecision}
	KeyDecidedBy  = Key{keyDecidedBy}
	KeyJudgeKind  = Key{keyJudgeKind}
	KeyJudgeScore = Key{keyJudgeScore}
	KeyAttempt    = Key{keyAttempt}
	KeyHook       = Key{keyHook}
	KeyTool       = Key{keyTool} // a tool the MCP server has (set once the call was taken)
	KeyHTTPStatus = Key{keyHTTPStatus}
)

// The keys' ids: a span's attribute holds one, not the name.
const (
	keyRequestID uint8 = iota + 1
	keyAgent
	keyCapability
	keyOutcome
	keyStatus
	keyBlockedBy
	keyLayers
	keyMessenger
	keyDecision
	keyDecidedBy
	keyJudgeKind
	keyJudgeScore
	keyAttempt
	keyHook
	keyTool
	keyHTTPStatus
)

// keyNames are the keys' names, by id.
var keyNames = [...]string{
	keyRequestID:  "gateway.request_id",
	keyAgent:      "gateway.agent",
	keyCapability: "gateway.capability",
	keyOutcome:    "gateway.outcome",
	keyStatus:     "gateway.status",
	keyBlockedBy:  "gateway.blocked_by",
	keyLayers:     "gateway.layers",
	keyMessenger:  "gateway.messenger",
	keyDecision:   "gateway.decision",
	keyDecidedBy:  "gateway.decided_by_channel",
	keyJudgeKind:  "gateway.judge.kind",
	keyJudgeScore: "gateway.judge.score",
	keyAttempt:    "gateway.attempt",
	keyHook:       "gateway.hook",
	keyTool:       "gateway.mcp.tool",
	keyHTTPStatus: "http.response.status_code",
}

// The kinds of an attribute's value.
const (
	valueString = iota
	valueInt
	valueFloat
)

// Attr is one attribute: a Key and its value.
type Attr struct {
	s    string
	x    uint64 // an int's two's complement, a float's bits
	key  uint8  // a Key's id
	kind uint8
}

// StringAttr is the attribute k = v.
func StringAttr(k Key, v string) Attr { return Attr{key: k.id, kind: valueString, s: v} }

// The kinds of a span (Span.SpanKind in OTLP).
const (
	kindInternal = 1
	kindServer   = 2
)

// inlineAttrs is how many attributes a span holds without allocating:
// more than any span of the gateway sets (the request's six).
const inlineAttrs = 8

// span is one span, as long as a context carries it: what identifies it
// and its trace, which its children and Traceparent read, and, until it
// ends, its record. It is allocated together with that context
// (spanContext): one small allocation per span; the record, larger, is
// reused from span to span.
type span struct {
	p         *Provider
	id        spanID
	traceFlag byte // the W3C flags: sampled, and random when the parent said so

	mu  sync.Mutex // guards rec: a span may be used from several goroutines
	rec *record    // nil once the span ended: what is done with it then is ignored
}

// record is what a span says, from its start to its end; then it is
// written (appendSpan), cleared and reused by another span.
type record struct {
	id        spanID
	traceFlag byte
	parent    [8]byte // zero: a root span
	remote    bool    // the parent is an agent's span (a traceparent)
	kind      uint8
	name      string
	start     time.Time // with the monotonic clock's reading, when started now
	end       int64     // Unix nanoseconds
	failed    bool
	desc      string // a failed span's fixed description
	n         uint8
	attrs     [inlineAttrs]Attr
	more      []Attr
	dropped   int // attributes past maxAttrs
}

// records are the records not in use.
var records = sync.Pool{New: func() any { return new(record) }}

// maxAttrs bounds a span's attributes: the keys are a closed set, so only
// a span set with each key is near it.
const maxAttrs = 32

// spanID is what identifies a span and its trace, and what its children
// inherit: the trace's id and state.
type spanID struct {
	trace [16]byte
	span  [8]byte
	state string // the W3C tracestate the agent sent, "" for none
}

// spanContext is the context that carries a span: one allocation for both.
type spanContext struct {
	context.Context
	span span
}

// ctxKey is the context key of the span a context carries.
type ctxKey struct{}

func (c *spanContext) Value(k any) any {
	if k == (ctxKey{}) {
		return &c.span
	}
	return c.Context.Value(k)
}

// spanIn is the span ctx carries, nil when none.
func spanIn(ctx context.Context) *span {
	s, _ := ctx.Value(ctxKey{}).(*span)
	return s
}

// Span is one span of a request's trace, or nothing: the zero Span (no
// trace in the context, or telemetry off) does nothing and costs nothing,
// so instrumented code needs no second path for "off".
type Span struct{ s *span }

// Start starts a child of the span ctx carries, when there is one (the
// request is traced); otherwise it returns ctx and the zero Span without
// allocating.
func Start(ctx context.Context, name string) (context.Context, Span) {
	if !everOn.Load() {
		return ctx, Span{}
	}
	parent := spanIn(ctx)
	if parent == nil {
		return ctx, Span{}
	}
	return parent.p.start(ctx, parent.id, parent.id.span, false, parent.traceFlag, name, kindInternal, time.Time{})
}

// SpanOf is the span ctx carries, as a Span: the zero Span when it carries
// none.
func SpanOf(ctx context.Context) Span {
	if !everOn.Load() {
		return Span{}
	}
	return Span{spanIn(ctx)}
}

// Recording reports whether the span records: the guard for work done
// only to describe it.
func (s Span) Recording() bool { return s.s != nil }

// End ends the span; it is exported with the next batch. A span ends
// once: what is done with it afterwards is ignored.
func (s Span) End() {
	if s.s != nil {
		s.s.finish(time.Time{})
	}
}

// EndAt ends the span at t (a span recorded after the fact: the wait).
func (s Span) EndAt(t time.Time) {
	if s.s != nil {
		s.s.finish(t)
	}
}

// String sets a string attribute.
func (s Span) String(k Key, v string) {
	if s.s != nil {
		s.s.set(Attr{key: k.id, kind: valueString, s: v})
	}
}

// Int sets an integer attribute.
func (s Span) Int(k Key, v int) {
	if s.s != nil {
		s.s.set(Attr{key: k.id, kind: valueInt, x: uint64(int64(v))})
	}
}

// Float sets a number attribute.
func (s Span) Float(k Key, v float64) {
	if s.s != nil {
		s.s.set(Attr{key: k.id, kind: valueFloat, x: math.Float64bits(v)})
	}
}

// Set sets attributes, in one update of the span.
func (s Span) Set(attrs ...Attr) {
	if s.s != nil {
		s.s.set(attrs...)
	}
}

// Fail marks the span failed with what, a fixed description chosen by
// the caller: never an error's text (see Key).
func (s Span) Fail(what string) {
	if s.s == nil {
		return
	}
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	if r := s.s.rec; r != nil {
		r.failed, r.desc = true, what
	}
}

// set sets each attribute, replacing the value of a key already set;
// the zero Key (Key{}) is none of the closed set, and is ignored.
func (s *span) set(attrs ...Attr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rec
	if r == nil {
		return
	}
next:
	for _, a := range attrs {
		if a.key == 0 {
			continue // the zero Key: not one of the keys
		}
		for i := range r.n {
			if r.attrs[i].key == a.key {
				r.attrs[i] = a
				continue next
			}
		}
		for i := range r.more {
			if r.more[i].key == a.key {
				r.more[i] = a
				continue next
			}
		}
		switch {
		case r.n < inlineAttrs:
			r.attrs[r.n] = a
			r.n++
		case int(r.n)+len(r.more) < maxAttrs:
			r.more = append(r.more, a)
		default:
			r.dropped++
		}
	}
}

// finish ends the span at end (zero: now), writes its record into the
// queue and puts it back for another span.
func (s *span) finish(end time.Time) {
	s.mu.Lock()
	r := s.rec
	s.rec = nil
	s.mu.Unlock()
	if r == nil {
		return // ended before
	}
	if end.IsZero() {
		// As OpenTelemetry's SDK: the start's wall time and the duration
		// on the monotonic clock, which one clock reading gives.
		end = r.start.Add(time.Since(r.start))
	}
	r.end = end.UnixNano()
	s.p.q.add(r)
	*r = record{}
	records.Put(r)
}
