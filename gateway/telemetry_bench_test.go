package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/metnos/gateway/telemetry"
)

// BenchmarkTelemetryOverhead runs POST /v1/check and decided-now POST
// /v1/requests on two gateways, telemetry off and on (exporting every
// span to a local OTLP/HTTP endpoint that reads and drops them),
// interleaved in rounds, in turn first, so that the machine's other
// load hits both alike. It reports each one's median req/s and CPU per request (client,
// server and exporter, in this process: other load does not change it)
// and the on ÷ off ratios (issue 42: on within 10 % of off).
func BenchmarkTelemetryOverhead(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	ctx := context.Background()
	tel, err := telemetry.New(ctx, telemetry.Config{Endpoint: sink.URL}, func(string) string { return "" },
		slog.New(slog.DiscardHandler))
	if err != nil || tel == nil {
		b.Fatalf("telemetry.New = %v, %v", tel, err)
	}
	defer tel.Shutdown(ctx)
	gws := map[string]*e2eGateway{"off": startE2E(b, e2eOptions{}), "on": startE2E(b, e2eOptions{tel: tel})}
	client := benchClient()
	defer client.CloseIdleConnections()
	loads := map[string]func(url string, run, i int) *http.Request{
		"check":    func(url string, _, _ int) *http.Request { return benchPost(url+"/v1/check", tokBench, checkBody) },
		"requests": decidedNowReq,
	}
	for _, g := range gws {
		for _, mk := range loads {
			run := int(benchRun.Add(1))
			warm(b, client, http.StatusOK, func(i int) *http.Request { return mk(g.URL, run, i) })
		}
	}
	per := max(b.N/throughputRounds, 1)
	got := map[string][]loadResult{}
	b.ResetTimer()
	for round := range throughputRounds {
		for name, mk := range loads {
			// Off first in one round, on first in the next: what a run
			// leaves to the next one (the garbage it made, its database's
			// work) falls on each alike.
			modes := []string{"off", "on"}
			if round%2 == 1 {
				modes = []string{"on", "off"}
			}
			for _, mode := range modes {
				run, url := int(benchRun.Add(1)), gws[mode].URL
				got[name+"_"+mode] = append(got[name+"_"+mode],
					runLoad(b, client, per, http.StatusOK, func(i int) *http.Request { return mk(url, run, i) }))
			}
		}
	}
	b.StopTimer()
	if err := tel.ForceFlush(ctx); err != nil {
		b.Fatal(err)
	}
	// Every span exported: none dropped at this rate (the queue's
	// default), none lost to a failed export.
	st := tel.Stats()
	b.ReportMetric(float64(st.Exported), "spans_exported")
	b.ReportMetric(float64(st.Dropped+st.Failed), "spans_lost")
	med := func(key string, f func(loadResult) float64) float64 {
		vs := []float64{}
		for _, r := range got[key] {
			vs = append(vs, f(r))
		}
		slices.Sort(vs)
		return vs[len(vs)/2]
	}
	rps := func(r loadResult) float64 { return r.rps() }
	cpu := func(r loadResult) float64 { return float64(r.cpuPerReq()) / 1e3 }
	for name := range loads {
		for _, mode := range []string{"off", "on"} {
			b.ReportMetric(med(name+"_"+mode, rps), name+"_"+mode+"_req/s")
			b.ReportMetric(med(name+"_"+mode, cpu), name+"_"+mode+"_cpu_us/req")
		}
		b.ReportMetric(med(name+"_on", rps)/med(name+"_off", rps), name+"_on/off_req/s")
		b.ReportMetric(med(name+"_on", cpu)/med(name+"_off", cpu), name+"_on/off_cpu")
	}
}
