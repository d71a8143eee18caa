package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// exporter sends batches of finished spans through an OTLP client (HTTP
// or gRPC, as configured, with the OTEL_EXPORTER_OTLP_* headers, TLS,
// compression, timeout and retries the client reads). It writes each
// batch's message itself (encode.go), in the batch's own buffer: its
// spans follow room kept for what wraps them (headRoom), written there
// at export (putHead). The ResourceSpans handed to the client is an empty
// message whose unknown fields are those bytes, which the client's
// marshalling copies as they are. Only the queue's goroutine uses it.
type exporter struct {
	client otlptrace.Client
	res    []byte                   // the resource's fields, written once
	room   int                      // what each batch keeps before its spans: headRoom(res)
	head   []byte                   // scratch for putHead
	msgs   []*tracepb.ResourceSpans // one, reused
}

// newExporter exports through client, a started client, the spans of res.
func newExporter(client otlptrace.Client, res *resource.Resource) *exporter {
	e := &exporter{client: client, res: appendResource(nil, res), msgs: []*tracepb.ResourceSpans{{}}}
	e.room = headRoom(e.res)
	return e
}

// export sends the spans of b (after e.room bytes of room) in one
// ResourceSpans.
func (e *exporter) export(ctx context.Context, b *batch) error {
	var start int
	start, e.head = putHead(b.b, e.room, e.res, e.head)
	m := e.msgs[0].ProtoReflect()
	m.SetUnknown(protoreflect.RawFields(b.b[start:]))
	err := e.client.UploadTraces(ctx, e.msgs)
	// Nothing of this batch is kept past it: the client marshalled the
	// message (its bytes are the batch's, reused by a later one).
	m.SetUnknown(nil)
	if err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}
