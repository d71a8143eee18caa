package telemetry

import (
	"context"
	"slices"
	"strings"
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

// sorted orders the scopes of each ResourceSpans by name: the exporter's
// own transform groups them through a map.
func sorted(rss []*tracepb.ResourceSpans) []*tracepb.ResourceSpans {
	for _, rs := range rss {
		slices.SortFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int { return strings.Compare(a.Scope.GetName(), b.Scope.GetName()) })
	}
	return rss
}

// The messages this package writes are the ones otlptrace's exporter
// makes of the same spans, field for field: every kind of attribute
// value, events, links, a status, a remote parent, two scopes, a
// resource with a schema; and a second batch through the same buffer.
func TestEncode_AsTheExporter(t *testing.T) {
	ctx := context.Background()
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("vendor=abc,other=x")
	if err != nil {
		t.Fatal(err)
	}
	sc := func(sid byte, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid, 1, 2, 3, 4, 5, 6, 7},
			TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "metnos-gateway"), attribute.Int("n", 3))
	start := time.Date(2026, 11, 28, 15, 0, 0, 123456789, time.UTC)
	every := []attribute.KeyValue{
		attribute.String("s", "v"), attribute.String("empty", ""), attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Int64("zero", 0), attribute.Float64("x", 0.25),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, -1}), attribute.Float64Slice("fs", []float64{1.5}),
	}
	stubs := tracetest.SpanStubs{
		{
			Name: "request", SpanContext: sc(1, false), Parent: sc(9, true), SpanKind: trace.SpanKindServer,
			StartTime: start, EndTime: start.Add(time.Millisecond), Attributes: every, DroppedAttributes: 2,
			Events:        []sdktrace.Event{{Name: "e", Time: start.Add(time.Microsecond), Attributes: every[:3], DroppedAttributeCount: 1}, {Name: "bare", Time: start}},
			Links:         []sdktrace.Link{{SpanContext: sc(7, false), Attributes: every[:2], DroppedAttributeCount: 4}},
			DroppedEvents: 5, DroppedLinks: 6, ChildSpanCount: 1,
			Status:   sdktrace.Status{Code: codes.Error, Description: "card refused"},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: ScopeName, Version: "1", SchemaURL: "https://s"},
		},
		{
			Name: "policy", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start.Add(time.Microsecond), Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: instrumentation.Scope{Name: ScopeName, Version: "1", SchemaURL: "https://s"},
		},
		{
			Name: "other", SpanContext: sc(3, false), SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start,
			Resource:             res,
			InstrumentationScope: instrumentation.Scope{Name: "another", Attributes: attribute.NewSet(attribute.String("k", "v"))},
		},
	}
	spans := stubs.Snapshots()
	want := &captured{}
	theirs, err := otlptrace.New(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if err := theirs.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	got := &captured{}
	ours, err := newExporter(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got.got = nil
		if err := ours.ExportSpans(ctx, spans); err != nil {
			t.Fatal(err)
		}
		if len(got.got) != 1 || len(want.got) != 1 || !proto.Equal(sorted(got.got)[0], sorted(want.got)[0]) {
			t.Fatalf("encoded\n%v\nwant (otlptrace's)\n%v", got.got, want.got)
		}
	}
	if err := ours.ExportSpans(ctx, nil); err != nil || len(got.got) != 1 {
		t.Fatalf("an empty batch: %v, %d uploads, want none", err, len(got.got)-1)
	}
}
