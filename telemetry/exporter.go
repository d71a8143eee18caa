package telemetry

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter sends finished spans through an OTLP client (HTTP or gRPC, as
// configured, with the OTEL_EXPORTER_OTLP_* headers, TLS, compression and
// retries the client reads) as otlptrace's exporter does, but writes each
// batch's messages itself (encode.go) into a buffer kept from batch to
// batch: each ResourceSpans handed to the client is an empty message
// whose unknown fields are those bytes, which the client's marshalling
// copies as they are.
type exporter struct {
	client otlptrace.Client

	mu     sync.Mutex // ExportSpans is called by one goroutine; Shutdown may race it
	buf    []byte
	groups []group
	msgs   []*tracepb.ResourceSpans
	stop   sync.Once
}

// group is the spans of one resource in a batch, and their scopes.
type group struct {
	res    *resource.Resource
	spans  []sdktrace.ReadOnlySpan
	scopes []instrumentation.Scope
}

// newExporter starts client and exports through it.
func newExporter(ctx context.Context, client otlptrace.Client) (*exporter, error) {
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	return &exporter{client: client}, nil
}

// ExportSpans sends spans, one ResourceSpans per resource.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.grouped(spans)
	if len(e.groups) == 0 {
		return nil
	}
	e.buf = e.buf[:0]
	ends := make([]int, 0, 4)
	for _, g := range e.groups {
		e.buf = appendResourceSpans(e.buf, g.res, g.spans, g.scopes)
		ends = append(ends, len(e.buf))
	}
	e.msgs = e.msgs[:0]
	from := 0
	for _, end := range ends {
		m := &tracepb.ResourceSpans{}
		m.ProtoReflect().SetUnknown(protoreflect.RawFields(e.buf[from:end]))
		e.msgs = append(e.msgs, m)
		from = end
	}
	err := e.client.UploadTraces(ctx, e.msgs)
	// Nothing of this batch is kept past it: the client marshalled the
	// messages (their bytes are buf's, reused by the next batch).
	clear(e.msgs)
	for i := range e.groups {
		clear(e.groups[i].spans)
		e.groups[i].res = nil
	}
	if err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// grouped sorts spans into e.groups by resource, each with its scopes in
// the order they first appear.
func (e *exporter) grouped(spans []sdktrace.ReadOnlySpan) {
	e.groups = e.groups[:0]
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		i := slices.IndexFunc(e.groups, func(g group) bool { return sameResource(g.res, res) })
		if i < 0 {
			i = len(e.groups)
			if i < cap(e.groups) {
				e.groups = e.groups[:i+1]
				e.groups[i] = group{res: res, spans: e.groups[i].spans[:0], scopes: e.groups[i].scopes[:0]}
			} else {
				e.groups = append(e.groups, group{res: res})
			}
		}
		g := &e.groups[i]
		g.spans = append(g.spans, s)
		if sc := s.InstrumentationScope(); !slices.Contains(g.scopes, sc) {
			g.scopes = append(g.scopes, sc)
		}
	}
}

func sameResource(a, b *resource.Resource) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.Equivalent() == b.Equivalent() && a.SchemaURL() == b.SchemaURL()
}

// Shutdown stops the client once.
func (e *exporter) Shutdown(ctx context.Context) error {
	var err error
	e.stop.Do(func() { err = e.client.Stop(ctx) })
	return err
}
