// Package telemetry traces each request's life with OpenTelemetry and
// exports the spans over OTLP (HTTP or gRPC). It is off unless an endpoint
// is configured ([telemetry] otlp_endpoint, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); off,
// there is no provider at all and every Span is the zero Span.
//
// What a span may say is limited by Key: names and outcomes, never a
// target, an argument value or a secret.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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

// The environment variables read here; the exporters read the rest of
// OTEL_EXPORTER_OTLP_* (headers, timeout, compression, certificates).
const (
	envDisabled       = "OTEL_SDK_DISABLED"
	envExporter       = "OTEL_TRACES_EXPORTER"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Resolved is what the configuration and the environment make of it.
type Resolved struct {
	On       bool
	Endpoint string // "" when the environment names it (the exporter reads it)
	Protocol string
}

// Resolve applies the environment to c: an endpoint there turns tracing
// on (and wins over the file's, as every variable does); OTEL_SDK_DISABLED
// = true or OTEL_TRACES_EXPORTER = none turns it off. A protocol other
// than ProtocolHTTP and ProtocolGRPC is an error naming where it came from.
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
	return r, nil
}

// Provider makes the gateway's spans and exports them. A nil *Provider is
// telemetry off: its Start returns the zero Span.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// New builds the provider c and the environment ask for: nil (and no
// error) when tracing is off. Export failures are logged on log, never
// returned to a request: a collector that is down slows nothing (spans
// queue, then are dropped).
func New(ctx context.Context, c Config, getenv func(string) string, log *slog.Logger) (*Provider, error) {
	r, err := Resolve(c, getenv)
	if err != nil || !r.On {
		return nil, err
	}
	var client otlptrace.Client
	if r.Protocol == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if r.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(r.Endpoint))
		}
		client = otlptracegrpc.NewClient(opts...)
	} else {
		var opts []otlptracehttp.Option
		if r.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(r.Endpoint, "/")+"/v1/traces"))
		}
		client = otlptracehttp.NewClient(opts...)
	}
	exp, err := newExporter(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", ServiceName)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("telemetry: export failed", "err", err)
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	everOn.Store(true)
	return &Provider{tp: tp, tracer: tp.Tracer(ScopeName)}, nil
}

// everOn is set once any provider was made in this process: until then no
// context can carry a span that records, and Start and SpanOf answer
// without looking (a look walks the request's whole context chain, on
// every layer of every decision).
var everOn atomic.Bool

// Start starts a span under whatever ctx carries (a span of this process,
// or a remote parent from Extract), a new trace when it carries none.
func (p *Provider) Start(ctx context.Context, name string) (context.Context, Span) {
	if p == nil {
		return ctx, Span{}
	}
	ctx, s := p.tracer.Start(ctx, name)
	return ctx, Span{s}
}

// StartServer is Start for the span of an incoming call (an agent's
// request), a child of the traceparent the agent sent when it sent one.
func (p *Provider) StartServer(ctx context.Context, name, traceparent, tracestate string) (context.Context, Span) {
	if p == nil {
		return ctx, Span{}
	}
	ctx, s := p.tracer.Start(Extract(ctx, traceparent, tracestate), name, trace.WithSpanKind(trace.SpanKindServer))
	return ctx, Span{s}
}

// StartIn starts a span in the trace traceparent names (a request's,
// kept with it), at start when start is not zero; the zero Span when
// traceparent is empty: the request was not traced.
func (p *Provider) StartIn(ctx context.Context, traceparent, name string, start time.Time) (context.Context, Span) {
	if p == nil || traceparent == "" {
		return ctx, Span{}
	}
	opts := []trace.SpanStartOption{}
	if !start.IsZero() {
		opts = append(opts, trace.WithTimestamp(start))
	}
	ctx, s := p.tracer.Start(Extract(ctx, traceparent, ""), name, opts...)
	return ctx, Span{s}
}

// Shutdown exports the spans still queued, then stops.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.Shutdown(ctx)
}

// ForceFlush exports the spans still queued.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}
