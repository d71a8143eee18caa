package gateway

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/telemetry/otlptest"
)

// /metrics counts the spans telemetry exported, failed to export and
// dropped; off, it shows no such series.
func TestMetrics_TelemetrySpans(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	ctx := context.Background()
	tel := rcv.Provider(t, nil)
	rctx, r := tel.StartServer(ctx, "request", "", "")
	_, v := telemetry.Start(rctx, "validate")
	v.End()
	r.End()
	if err := tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	scrape := func(m *Metrics) string {
		w := httptest.NewRecorder()
		m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(w.Result().Body)
		return string(b)
	}
	on := NewMetrics()
	on.watchTelemetry(tel)
	got := scrape(on)
	for _, want := range []string{`gateway_telemetry_spans_total{result="exported"} 2`, `gateway_telemetry_spans_total{result="failed"} 0`,
		`gateway_telemetry_spans_total{result="dropped"} 0`} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("/metrics has no %s", want)
		}
	}
	off := NewMetrics()
	off.watchTelemetry(nil)
	if got := scrape(off); strings.Contains(got, "gateway_telemetry_spans_total") {
		t.Error("/metrics counts spans with telemetry off")
	}
}
