package gateway

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/metnos/gateway/storage/storagetest"
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

// /metrics shows the group writer's and the checkpointer's counters, read
// from the database at scrape time.
func TestMetrics_GroupWriter(t *testing.T) {
	db := storagetest.Open(t)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE rows (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := db.GroupExec(ctx, nil, `INSERT INTO rows DEFAULT VALUES`, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	m := NewMetrics()
	m.watchStorage(db)
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(w.Result().Body)
	got := string(b)
	if !strings.Contains(got, "gateway_storage_group_calls_total 3\n") {
		t.Errorf("/metrics does not count the 3 grouped calls:\n%s", got)
	}
	for _, name := range []string{"gateway_storage_group_commits_total", "gateway_storage_group_busy_seconds_total",
		"gateway_storage_group_gather_seconds_total", "gateway_storage_write_slot_wait_seconds_total",
		"gateway_storage_checkpoint_hold_seconds_total"} {
		if !strings.Contains(got, "\n"+name+" ") {
			t.Errorf("/metrics has no %s", name)
		}
	}
}
