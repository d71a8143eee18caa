// Package telemetry traces each request's life and exports the spans over
// OTLP (HTTP or gRPC) with OpenTelemetry's clients. It is off unless an
// endpoint is configured ([telemetry] otlp_endpoint, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); off,
// there is no provider at all and every Span is the zero Span.
//
// The spans are recorded here, not by OpenTelemetry's SDK: a span is one
// small allocation (with the context that carries it), what it says a
// record reused from span to span; when it ends it is written as its OTLP message (encode.go) and
// the bytes are queued under one short lock; a goroutine hands the queued
// messages, in batches, to OpenTelemetry's OTLP client. That is the part
// of the SDK the gateway used, for a fraction of its CPU
// (docs/reliability.md#telemetry).
//
// What a span may say is limited by Key: names and outcomes, never a
// target, an argument value or a secret.
package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The OTLP protocols ([telemetry] protocol, OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// ServiceName is the service.name of the gateway's spans unless
// OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const ServiceName = "metnos-gateway"

// Config is the [telemetry] table.
type Config struct {
	// Endpoint is the collector's base URL: spans go to Endpoint/v1/traces
	// over HTTP, to its host and port over gRPC. "" (and no endpoint in the
	// environment) means off.
	Endpoint string
	// Protocol is ProtocolHTTP ("" too) or ProtocolGRPC.
	Protocol string
}

// The environment variables read here; the OTLP clients read the rest of
// OTEL_EXPORTER_OTLP_* (headers, timeout, compression, certificates).
const (
	envDisabled       = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envQueue          = "OTEL_BSP_MAX_QUEUE_SIZE"
	envBatch          = "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"
	envDelay          = "OTEL_BSP_SCHEDULE_DELAY"
	envExportTimeout  = "OTEL_BSP_EXPORT_TIMEOUT"
)

// Batching is how finished spans wait and leave (the OTEL_BSP_* variables).
type Batching struct {
	// Queue is how many finished spans may wait for export; a span ended
	// while Queue wait is dropped, and counted (Stats.Dropped).
	Queue int
	// Batch is the most spans one export sends; an export starts as soon
	// as Batch spans wait.
	Batch int
	// Delay is the longest a span waits for its export when fewer than
	// Batch wait.
	Delay time.Duration
	// Timeout bounds one export.
	Timeout time.Duration
}

// DefaultBatching is the batching unless OTEL_BSP_* say otherwise: the
// specification's delay and timeout, a queue of 16384 spans (the
// specification's 2048 is 40 ms of a gateway deciding 10,000 requests a
// second, five spans each: one slow export would drop spans) and batches
// of 2048 spans (the specification's 512), about 300 kB each: every
// export costs the gateway and the collector beside it a fixed amount of
// work and wake-ups on top of its bytes, and at 10,000 requests a second
// 512-span batches are a hundred exports a second
// (docs/reliability.md#telemetry).
var DefaultBatching = Batching{Queue: 16384, Batch: 2048, Delay: 5 * time.Second, Timeout: 30 * time.Second}

// Resolved is what the configuration and the environment make of it.
type Resolved struct {
	On       bool
	Endpoint string // "" when the environment names it (the client reads it)
	Protocol string
	Sampler  Sampler  // when On
	Batching Batching // when On
}

// Resolve applies the environment to c: an endpoint there turns tracing
// on (and wins over the file's, as every variable does); OTEL_SDK_DISABLED
// = true or OTEL_TRACES_EXPORTER = none turns it off. A protocol other
// than ProtocolHTTP and ProtocolGRPC is an error naming where it came
// from; so, when tracing is on, is a sampler or a batching variable this
// package does not take.
func Resolve(c Config, getenv func(string) string) (Resolved, error) {
	r := Resolved{Endpoint: c.Endpoint, Protocol: c.Protocol}
	from := "telemetry.protocol"
	for _, k := range []string{envProtocol, envTracesProtocol} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			r.Protocol, from = v, k
		}
	}
	if r.Protocol == "" {
		r.Protocol = ProtocolHTTP
	}
	if r.Protocol != ProtocolHTTP && r.Protocol != ProtocolGRPC {
		return Resolved{}, fmt.Errorf("%s: unsupported protocol %q (want %q or %q)", from, r.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if getenv(envEndpoint) != "" || getenv(envTracesEndpoint) != "" {
		r.Endpoint = ""
		r.On = true
	} else {
		r.On = r.Endpoint != ""
	}
	if strings.EqualFold(strings.TrimSpace(getenv(envDisabled)), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv(envExporter)), "none") {
		r.On = false
	}
	if !r.On {
		return r, nil
	}
	var err error
	if r.Sampler, err = sampler(getenv); err != nil {
		return Resolved{}, err
	}
	if r.Batching, err = batching(getenv); err != nil {
		return Resolved{}, err
	}
	return r, nil
}

// batching reads the OTEL_BSP_* variables over DefaultBatching: counts
// and milliseconds, each a positive integer. A batch larger than the
// queue is the queue's size.
func batching(getenv func(string) string) (Batching, error) {
	b := DefaultBatching
	for _, v := range []struct {
		env string
		set func(int)
	}{
		{envQueue, func(n int) { b.Queue = n }},
		{envBatch, func(n int) { b.Batch = n }},
		{envDelay, func(n int) { b.Delay = time.Duration(n) * time.Millisecond }},
		{envExportTimeout, func(n int) { b.Timeout = time.Duration(n) * time.Millisecond }},
	} {
		s := strings.TrimSpace(getenv(v.env))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return Batching{}, fmt.Errorf("%s: %q is not a positive integer", v.env, s)
		}
		v.set(n)
	}
	b.Batch = min(b.Batch, b.Queue)
	return b, nil
}

// Start starts a span under whatever ctx carries (a span of this process),
// a new trace when it carries none.
func (p *Provider) Start(ctx context.Context, name string) (context.Context, Span) {
	if p == nil {
		return ctx, Span{}
	}
	if parent := spanIn(ctx); parent != nil {
		return parent.p.start(ctx, parent.id, parent.id.span, false, parent.traceFlag, name, kindInternal, time.Time{})
	}
	return p.startRoot(ctx, name, kindInternal, time.Time{})
}

// StartServer is Start for the span of an incoming call (an agent's
// request), a child of the traceparent the agent sent when it sent a
// well-formed one (a new trace otherwise). Whether it records is the
// sampler's decision: the default follows the agent's sampled flag.
func (p *Provider) StartServer(ctx context.Context, name, traceparent, tracestate string) (context.Context, Span) {
	if p == nil {
		return ctx, Span{}
	}
	if traceparent != "" {
		if rp, ok := parseTraceparent(traceparent, tracestate); ok {
			return p.startRemote(ctx, rp, name, kindServer, time.Time{})
		}
	}
	if parent := spanIn(ctx); parent != nil {
		return parent.p.start(ctx, parent.id, parent.id.span, false, parent.traceFlag, name, kindServer, time.Time{})
	}
	return p.startRoot(ctx, name, kindServer, time.Time{})
}

// StartIn starts a span in the trace traceparent names (a request's,
// kept with it), at start when start is not zero; the zero Span when
// traceparent is empty: the request was not traced.
func (p *Provider) StartIn(ctx context.Context, traceparent, name string, start time.Time) (context.Context, Span) {
	if p == nil || traceparent == "" {
		return ctx, Span{}
	}
	rp, ok := parseTraceparent(traceparent, "")
	if !ok {
		return ctx, Span{}
	}
	return p.startRemote(ctx, rp, name, kindInternal, start)
}
