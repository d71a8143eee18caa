package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Provider makes the gateway's spans and exports them. A nil *Provider is
// telemetry off: its Start returns the zero Span.
type Provider struct {
	sampler decider
	q       *queue
	closed  atomic.Bool // Shutdown was called: no span starts
	stop    sync.Once
	stopErr error
}

// New builds the provider c and the environment ask for: nil (and no
// error) when tracing is off. Export failures are logged on log, never
// returned to a request: a collector that is down slows nothing (spans
// queue, then are dropped, and counted: Stats).
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
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", ServiceName)), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	// What the clients report besides a failed export (a collector that
	// took part of one).
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("telemetry: export failed", "err", err)
	}))
	return newProvider(r, newExporter(client, res), log), nil
}

// newProvider starts the goroutine that exports what exp is given.
func newProvider(r Resolved, exp *exporter, log *slog.Logger) *Provider {
	p := &Provider{sampler: r.Sampler.decider(), q: newQueue(exp, r.Batching, log)}
	go p.q.run()
	everOn.Store(true)
	return p
}

// everOn is set once any provider was made in this process: until then no
// context can carry a span, and Start and SpanOf answer without looking
// (a look walks the request's whole context chain, on every layer of
// every decision).
var everOn atomic.Bool

// startRoot starts the first span of a new trace, when the sampler
// records it.
func (p *Provider) startRoot(ctx context.Context, name string, kind uint8, at time.Time) (context.Context, Span) {
	var id spanID
	for id.trace == ([16]byte{}) {
		binary.BigEndian.PutUint64(id.trace[:8], rand.Uint64())
		binary.BigEndian.PutUint64(id.trace[8:], rand.Uint64())
	}
	if !p.sampler.sample(id.trace, false, false) {
		return ctx, Span{}
	}
	return p.start(ctx, id, [8]byte{}, false, flagSampled, name, kind, at)
}

// startRemote starts a child of an agent's span (or of a request's,
// kept), when the sampler records it.
func (p *Provider) startRemote(ctx context.Context, rp remoteParent, name string, kind uint8, at time.Time) (context.Context, Span) {
	if !p.sampler.sample(rp.id.trace, true, rp.flags&flagSampled != 0) {
		return ctx, Span{}
	}
	return p.start(ctx, rp.id, rp.id.span, true, rp.flags|flagSampled, name, kind, at)
}

// start records a span of trace id, child of parent (zero for a root),
// that began at at (zero: now).
func (p *Provider) start(ctx context.Context, id spanID, parent [8]byte, remote bool, flags byte, name string, kind uint8, at time.Time) (context.Context, Span) {
	if p.closed.Load() {
		return ctx, Span{}
	}
	if at.IsZero() {
		at = time.Now()
	}
	c := &spanContext{Context: ctx}
	s := &c.span
	for id.span = parent; id.span == ([8]byte{}) || id.span == parent; {
		binary.BigEndian.PutUint64(id.span[:], rand.Uint64())
	}
	r := records.Get().(*record)
	r.id, r.traceFlag, r.parent, r.remote, r.name, r.kind, r.start = id, flags, parent, remote, name, kind, at
	s.p, s.id, s.traceFlag, s.rec = p, id, flags, r
	return c, Span{s}
}

// Stats counts the spans that ended: exported (the collector took the
// export that held them), failed (the export that held them failed) and
// dropped (the queue was full, or the provider shut down).
type Stats struct {
	Exported, Failed, Dropped uint64
}

// Stats is what became of the spans so far; zero when p is nil.
func (p *Provider) Stats() Stats {
	if p == nil {
		return Stats{}
	}
	return Stats{Exported: p.q.exported.Load(), Failed: p.q.failed.Load(), Dropped: p.q.dropped.Load()}
}

// Shutdown exports the spans still queued, then stops: a span that ends
// afterwards is dropped, and none starts. It returns the last export's
// error, or ctx's when ctx ends first (the export under way is then
// cancelled).
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	p.stop.Do(func() {
		p.closed.Store(true)
		p.stopErr = p.q.shutdown(ctx)
	})
	return p.stopErr
}

// ForceFlush exports the spans queued (every span that ended before it
// was called) and returns the first export's error, or ctx's when ctx
// ends first.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.q.flush(ctx)
}
