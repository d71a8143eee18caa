package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/metnos/gateway/telemetry"
)

// cpuTime is the CPU time this process used so far: the exporter works
// in goroutines of its own, so a trace's cost is measured as CPU, not
// as the time of the loop that makes the spans.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecidedNowTrace makes the trace of a request that policy
// decides at once (request, validate, policy with its layers, vaglio,
// store), as the gateway does, and exports every span over
// OTLP/HTTP to a local endpoint that reads and drops them. It reports
// the CPU per trace (making, exporting, collecting its garbage, and the
// endpoint reading it), the bytes the endpoint received per trace (every
// span arrives: 766) and the allocations: what telemetry adds to such a
// request (docs/reliability.md#telemetry).
func BenchmarkDecidedNowTrace(b *testing.B) {
	var got atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
	}))
	defer sink.Close()
	// A queue that holds every span, however far the exporter falls
	// behind the loop: a dropped span would cost nothing to export.
	ctx := context.WithValue(context.Background(), testKey{}, 1)
	p, err := telemetry.New(ctx, telemetry.Config{Endpoint: sink.URL}, env(map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "1000000"}),
		slog.New(slog.DiscardHandler))
	if err != nil || p == nil {
		b.Fatalf("New = %v, %v", p, err)
	}
	defer p.Shutdown(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for range b.N {
		rctx, root := p.StartServer(ctx, "request", "", "")
		root.String(telemetry.KeyAgent, "bench")
		_, v := telemetry.Start(rctx, "validate")
		v.End()
		pctx, pol := telemetry.Start(rctx, "policy")
		pol.String(telemetry.KeyCapability, "llm:local")
		_, vg := telemetry.Start(pctx, "vaglio")
		vg.String(telemetry.KeyJudgeKind, "rule-based-v1")
		vg.Float(telemetry.KeyJudgeScore, 0.8)
		vg.End()
		pol.String(telemetry.KeyOutcome, "allowed")
		pol.String(telemetry.KeyLayers, "profile table:allowed rules combine:allowed vaglio:allowed")
		pol.End()
		_ = telemetry.Traceparent(rctx)
		_, st := telemetry.Start(rctx, "store")
		st.End()
		root.Set(telemetry.StringAttr(telemetry.KeyRequestID, "01JDZX0000000000000000000"),
			telemetry.StringAttr(telemetry.KeyCapability, "llm:local"),
			telemetry.StringAttr(telemetry.KeyOutcome, "allowed"), telemetry.StringAttr(telemetry.KeyStatus, "allowed"))
		root.End()
	}
	if err := p.ForceFlush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/1e3/float64(b.N), "cpu_us/trace")
	b.ReportMetric(float64(got.Load())/float64(b.N), "sent_B/trace")
	if st := p.Stats(); st.Dropped != 0 || st.Failed != 0 || st.Exported != 5*uint64(b.N) {
		b.Fatalf("%+v, want every span of the %d traces exported", st, b.N)
	}
}
