package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// gated is an otlptrace.Client whose uploads wait for release, each
// announced on started, and counted as their spans.
type gated struct {
	started chan int
	release chan error
	mu      sync.Mutex
	spans   int
}

func (g *gated) Start(context.Context) error { return nil }
func (g *gated) Stop(context.Context) error  { return nil }
func (g *gated) UploadTraces(ctx context.Context, rss []*tracepb.ResourceSpans) error {
	n := 0
	for _, rs := range rss {
		b, err := proto.Marshal(rs)
		if err != nil {
			return err
		}
		var back tracepb.ResourceSpans
		if err := proto.Unmarshal(b, &back); err != nil {
			return err
		}
		for _, ss := range back.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	g.started <- n
	select {
	case err := <-g.release:
		if err == nil {
			g.mu.Lock()
			g.spans += n
			g.mu.Unlock()
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ended(p *Provider, n int) {
	for range n {
		_, s := p.Start(context.Background(), "s")
		s.End()
	}
}

// A span that ends while the queue is full is dropped and counted; every
// span that ended is exported, failed or dropped, none twice; an export
// starts as soon as a batch is full; a failed export's spans are counted
// as failed and ForceFlush returns its error.
func TestQueue_FullDropsAndCounts(t *testing.T) {
	ctx := context.Background()
	g := &gated{started: make(chan int, 8), release: make(chan error, 8)}
	p := newProvider(Resolved{On: true, Sampler: Sampler{Name: SamplerParentAlwaysOn},
		Batching: Batching{Queue: 10, Batch: 5, Delay: time.Hour, Timeout: time.Minute}},
		newExporter(g, nil), slog.New(slog.DiscardHandler))
	ended(p, 5)
	if n := <-g.started; n != 5 {
		t.Fatalf("first export of %d spans, want the full batch of 5", n)
	}
	ended(p, 13) // 10 wait; 3 dropped
	if st := p.Stats(); st.Dropped != 3 {
		t.Fatalf("stats %+v, want 3 dropped", st)
	}
	g.release <- nil                          // the first batch
	g.release <- errors.New("collector down") // the second
	g.release <- nil                          // the third
	if err := p.ForceFlush(ctx); err != nil {
		t.Fatal(err) // the full batches were exported before it: nothing was left to it
	}
	for range 2 {
		<-g.started
	}
	if st := p.Stats(); st != (Stats{Exported: 10, Failed: 5, Dropped: 3}) {
		t.Fatalf("stats %+v, want 10 exported, 5 failed, 3 dropped", st)
	}
	ended(p, 2)
	g.release <- errors.New("collector down")
	if err := p.ForceFlush(ctx); err == nil {
		t.Fatal("ForceFlush: no error, want its failed export's")
	}
	if n := <-g.started; n != 2 {
		t.Fatalf("ForceFlush exported %d spans, want the 2 queued", n)
	}
	if g.spans != 10 {
		t.Fatalf("the collector took %d spans, want 10", g.spans)
	}
	// Shut down: the queued spans are exported, then a span that ends is
	// dropped and none starts.
	_, late := p.Start(ctx, "late")
	ended(p, 2)
	g.release <- nil
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-g.started
	late.End()
	if _, s := p.Start(ctx, "after"); s.Recording() {
		t.Fatal("a span started after Shutdown")
	}
	if st := p.Stats(); st != (Stats{Exported: 12, Failed: 7, Dropped: 4}) {
		t.Fatalf("stats %+v, want 12 exported, 7 failed, 4 dropped", st)
	}
}

// Each sampler records what OpenTelemetry's does: the default follows an
// agent's sampled flag and samples new traces; traceidratio keeps the
// traces whose id falls under the ratio, a ratio of 0 none; always_on
// records under an agent's unsampled trace too.
func TestSampler_Decides(t *testing.T) {
	const sampled, unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
	for _, tc := range []struct {
		env                     map[string]string
		root, underOn, underOff bool
	}{
		{env: nil, root: true, underOn: true},
		{env: map[string]string{envSampler: "always_on"}, root: true, underOn: true, underOff: true},
		{env: map[string]string{envSampler: "always_off"}},
		{env: map[string]string{envSampler: "parentbased_always_off"}, underOn: true},
		{env: map[string]string{envSampler: "traceidratio", envSamplerArg: "0"}},
		{env: map[string]string{envSampler: "parentbased_traceidratio", envSamplerArg: "0"}, underOn: true},
		{env: map[string]string{envSampler: "traceidratio", envSamplerArg: "1"}, root: true, underOn: true, underOff: true},
	} {
		s, err := sampler(func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatal(err)
		}
		p := testProvider(&captured{}, nil, s)
		_, r := p.StartServer(context.Background(), "r", "", "")
		_, on := p.StartServer(context.Background(), "r", sampled, "")
		_, off := p.StartServer(context.Background(), "r", unsampled, "")
		if r.Recording() != tc.root || on.Recording() != tc.underOn || off.Recording() != tc.underOff {
			t.Errorf("%v: new trace %v, under a sampled one %v, under an unsampled one %v; want %v %v %v", tc.env,
				r.Recording(), on.Recording(), off.Recording(), tc.root, tc.underOn, tc.underOff)
		}
		_ = p.Shutdown(context.Background())
	}
	// traceidratio: the trace ids under the ratio, as OpenTelemetry's bound.
	d := Sampler{Name: SamplerRatio, Ratio: 0.25}.decider()
	low, high := [16]byte{8: 0x3f, 9: 0xff}, [16]byte{8: 0x40}
	if !d.sample(low, false, false) || d.sample(high, false, false) {
		t.Error("traceidratio 0.25: want the ids under 2^61 in their last 8 bytes (shifted right one) sampled, the others not")
	}
	for _, env := range []map[string]string{
		{envSampler: "jaeger_remote"}, {envSampler: "traceidratio", envSamplerArg: "1.5"}, {envSampler: "traceidratio", envSamplerArg: "x"},
	} {
		if _, err := sampler(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v: no error", env)
		}
	}
}

// collector is an OTLP/gRPC trace receiver on 127.0.0.1.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// Over gRPC (OTLP's protocol grpc), the spans reach the collector.
func TestProvider_GRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c := &collector{}
	coltracepb.RegisterTraceServiceServer(srv, c)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	ctx := context.Background()
	p, err := New(ctx, Config{Endpoint: "http://" + ln.Addr().String(), Protocol: ProtocolGRPC},
		func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if err != nil || p == nil {
		t.Fatalf("New = %v, %v", p, err)
	}
	rctx, r := p.StartServer(ctx, "request", "", "")
	_, v := Start(rctx, "validate")
	v.End()
	r.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.names) != 2 || c.names[0] != "validate" || c.names[1] != "request" {
		t.Fatalf("the collector received %v, want validate and request", c.names)
	}
}

// OTEL_BSP_* set the batching over DefaultBatching; a batch larger than
// the queue is the queue.
func TestBatching_FromEnv(t *testing.T) {
	env := map[string]string{envQueue: "50", envBatch: "100000", envDelay: "250", envExportTimeout: "1000"}
	b, err := batching(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := (Batching{Queue: 50, Batch: 50, Delay: 250 * time.Millisecond, Timeout: time.Second}); b != want {
		t.Fatalf("got %+v, want %+v", b, want)
	}
	if b, _ := batching(func(string) string { return "" }); b != DefaultBatching {
		t.Fatalf("unset: %+v, want %+v", b, DefaultBatching)
	}
}
