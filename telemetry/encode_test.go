package telemetry

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// captured is an otlptrace.Client that keeps what it is given to upload,
// marshalled and read back as a collector would read it.
type captured struct{ got []*tracepb.ResourceSpans }

func (c *captured) Start(context.Context) error { return nil }
func (c *captured) Stop(context.Context) error  { return nil }
func (c *captured) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	for _, rs := range rss {
		b, err := proto.Marshal(rs)
		if err != nil {
			return err
		}
		var back tracepb.ResourceSpans
		if err := proto.Unmarshal(b, &back); err != nil {
			return err
		}
		c.got = append(c.got, &back)
	}
	return nil
}

// testProvider is a provider exporting through client, the spans of res,
// that exports only when flushed (or shut down).
func testProvider(client otlptrace.Client, res *resource.Resource, sampler Sampler) *Provider {
	return newProvider(Resolved{On: true, Sampler: sampler,
		Batching: Batching{Queue: 1000, Batch: 1000, Delay: time.Hour, Timeout: time.Minute}},
		newExporter(client, res), slog.New(slog.DiscardHandler))
}

// endAt ends s at t and returns a copy of its record as it is written.
func endAt(s Span, t time.Time) record {
	s.s.mu.Lock()
	r := *s.s.rec
	s.s.mu.Unlock()
	r.end = t.UnixNano()
	s.EndAt(t)
	return r
}

// stubOf is s as OpenTelemetry's SDK would have recorded it.
func stubOf(t *testing.T, s *record, res *resource.Resource) tracetest.SpanStub {
	ts, err := trace.ParseTraceState(s.id.state)
	if err != nil {
		t.Fatal(err)
	}
	st := tracetest.SpanStub{
		Name: s.name, SpanKind: trace.SpanKind(s.kind),
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.id.trace, SpanID: s.id.span,
			TraceFlags: trace.TraceFlags(s.traceFlag), TraceState: ts}),
		StartTime: s.start, EndTime: time.Unix(0, s.end), DroppedAttributes: s.dropped,
		Resource: res, InstrumentationScope: instrumentation.Scope{Name: ScopeName},
	}
	if s.parent != ([8]byte{}) {
		st.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.id.trace, SpanID: s.parent, Remote: s.remote})
	}
	for _, a := range append(slices.Clone(s.attrs[:s.n]), s.more...) {
		switch a.kind {
		case valueInt:
			st.Attributes = append(st.Attributes, attribute.Int64(keyNames[a.key], int64(a.x)))
		case valueFloat:
			st.Attributes = append(st.Attributes, attribute.Float64(keyNames[a.key], math.Float64frombits(a.x)))
		default:
			st.Attributes = append(st.Attributes, attribute.String(keyNames[a.key], a.s))
		}
	}
	if s.failed {
		st.Status = sdktrace.Status{Code: codes.Error, Description: s.desc}
	}
	return st
}

// The messages this package writes are the ones otlptrace's exporter
// makes of the same spans, field for field: a server span under an
// agent's traceparent and tracestate, its children, a span joined later
// by a kept traceparent, a new trace; every kind of attribute value (of
// the resource's: all OTLP has), a value set twice, a failed status; and
// a second batch through the same buffer.
func TestEncode_AsTheExporter(t *testing.T) {
	ctx := context.Background()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "metnos-gateway"), attribute.String("empty", ""), attribute.Bool("t", true),
		attribute.Bool("f", false), attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("x", 0.25),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -1}), attribute.Float64Slice("fs", []float64{1.5}))
	got := &captured{}
	p := testProvider(got, res, Sampler{Name: SamplerParentAlwaysOn})
	defer p.Shutdown(ctx)
	for batch := range 2 {
		got.got = nil
		var recs []record // each span's record, as it was written
		end := func(s Span) { recs = append(recs, endAt(s, time.Now())) }
		rctx, root := p.StartServer(ctx, "request", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03", "vendor=abc,other=x")
		root.String(KeyAgent, "a1")
		pctx, pol := Start(rctx, "policy")
		pol.Set(StringAttr(KeyOutcome, "allowed"), StringAttr(KeyLayers, ""), StringAttr(KeyOutcome, "denied"))
		_, vg := Start(pctx, "vaglio")
		vg.Float(KeyJudgeScore, 0.8)
		vg.Int(KeyAttempt, -3)
		vg.Int(KeyHTTPStatus, 0)
		end(vg)
		pol.Fail("request refused")
		end(pol)
		kept := Traceparent(rctx)
		end(root)
		_, w := p.StartIn(ctx, kept, "wait", time.Unix(1, 5))
		recs = append(recs, endAt(w, time.Unix(2, 0)))
		_, other := p.Start(ctx, "other")
		end(other)
		var stubs tracetest.SpanStubs
		for i := range recs {
			stubs = append(stubs, stubOf(t, &recs[i], res))
		}
		if len(stubs) != 5 {
			t.Fatalf("%d spans recorded, want 5", len(stubs))
		}
		want := &captured{}
		theirs, err := otlptrace.New(ctx, want)
		if err != nil {
			t.Fatal(err)
		}
		if err := theirs.ExportSpans(ctx, stubs.Snapshots()); err != nil {
			t.Fatal(err)
		}
		if err := p.ForceFlush(ctx); err != nil {
			t.Fatal(err)
		}
		if len(got.got) != 1 || len(want.got) != 1 || !proto.Equal(got.got[0], want.got[0]) {
			t.Fatalf("batch %d: encoded\n%v\nwant (otlptrace's)\n%v", batch, got.got, want.got)
		}
	}
	got.got = nil
	if err := p.ForceFlush(ctx); err != nil || len(got.got) != 0 {
		t.Fatalf("nothing queued: %v, %d uploads, want none", err, len(got.got))
	}
}
