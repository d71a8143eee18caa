package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// Metrics are the gateway's Prometheus series, on a registry of their own
// (no global state). It implements approvals.Observer.
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	sendFails   *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	leader      prometheus.Gauge
	pushes      *prometheus.CounterVec
}

// NewMetrics creates the series.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Approval requests by capability and outcome on arrival.",
		}, []string{"capability", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_decision_latency_seconds", Help: "Time from arrival to final status.",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 30, 60, 300, 900, 3600},
		}, []string{"status"}),
		sendFails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_channel_send_failures_total", Help: "Failed card posts or edits, by messenger.",
		}, []string{"channel"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_rate_limited_total", Help: "Requests refused by the per-agent rate limit.",
		}, []string{"agent", "capability"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gateway_leader", Help: "1 while this replica leads (polls Telegram, runs Socket Mode, posts cards, prunes).",
		}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_push_deliveries_total", Help: "Web Push deliveries to the web users' devices, by result (sent, gone, rate_limited, failed, refused).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.sendFails, m.rateLimited, m.leader, m.pushes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// watch adds the gauges read from the database at scrape time.
func (m *Metrics) watch(svc *approvals.Service) {
	count := func(f func(context.Context) (int, error)) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := f(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}
	}
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gateway_pending_requests", Help: "Requests waiting for a person.",
	}, count(svc.CountPending)))
	_ = m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gateway_active_grants", Help: "Grants neither revoked nor expired.",
	}, count(svc.Grants().CountActive)))
}

// watchTelemetry adds the count of the spans tel made, by what became of
// them: exported, failed (the export that held them failed) or dropped
// (its queue was full: their traces are incomplete). Off, nothing.
func (m *Metrics) watchTelemetry(tel *telemetry.Provider) {
	if tel == nil {
		return
	}
	for result, n := range map[string]func(telemetry.Stats) uint64{
		"exported": func(s telemetry.Stats) uint64 { return s.Exported },
		"failed":   func(s telemetry.Stats) uint64 { return s.Failed },
		"dropped":  func(s telemetry.Stats) uint64 { return s.Dropped },
	} {
		_ = m.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "gateway_telemetry_spans_total",
			Help:        "Spans of the traces exported over OTLP, by result: exported, failed (their export failed), dropped (the queue was full).",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(n(tel.Stats())) }))
	}
}

// watchStorage adds the group writer's and the checkpointer's counters
// (storage.WriterStats), read at scrape time: over an interval, calls ÷
// commits is the mean group's size, and each seconds counter ÷ the
// interval the share of it the writer spent committing, waiting for a
// group, waiting for the write slot, or the checkpointer held that slot.
func (m *Metrics) watchStorage(db *storage.DB) {
	if db == nil {
		return
	}
	for name, c := range map[string]struct {
		help string
		read func(storage.WriterStats) float64
	}{
		"gateway_storage_group_commits_total": {"Transactions of the group writer (decided-now requests and the other grouped writes).",
			func(s storage.WriterStats) float64 { return float64(s.Groups) }},
		"gateway_storage_group_calls_total": {"Calls the group writer's transactions held (÷ commits: the mean group).",
			func(s storage.WriterStats) float64 { return float64(s.Calls) }},
		"gateway_storage_group_busy_seconds_total": {"Time the group writer spent in its transactions, BEGIN to COMMIT.",
			func(s storage.WriterStats) float64 { return s.Busy.Seconds() }},
		"gateway_storage_group_gather_seconds_total": {"Time the group writer waited between groups for the next one to gather (SQLite).",
			func(s storage.WriterStats) float64 { return s.Gather.Seconds() }},
		"gateway_storage_write_slot_wait_seconds_total": {"Time the group writer waited for this process's write slot (SQLite).",
			func(s storage.WriterStats) float64 { return s.SlotWait.Seconds() }},
		"gateway_storage_checkpoint_hold_seconds_total": {"Time the WAL checkpointer held the write slot, every write waiting (SQLite).",
			func(s storage.WriterStats) float64 { return s.CheckpointHold.Seconds() }},
	} {
		_ = m.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: c.help},
			func() float64 { return c.read(db.WriterStats()) }))
	}
}

// Pushed counts one Web Push by its outcome.
func (m *Metrics) Pushed(result string) { m.pushes.WithLabelValues(result).Inc() }

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Outcome counts a request on arrival.
func (m *Metrics) Outcome(capability string, o policy.Outcome, _ approvals.Status) {
	m.requests.WithLabelValues(capability, string(o)).Inc()
}

// Decided records how long a request took to finish.
func (m *Metrics) Decided(st approvals.Status, d time.Duration) {
	m.latency.WithLabelValues(string(st)).Observe(d.Seconds())
}

func (m *Metrics) setLeader(leader bool) {
	if leader {
		m.leader.Set(1)
	} else {
		m.leader.Set(0)
	}
}

// SendFailed counts a failed card post or edit.
func (m *Metrics) SendFailed(channel string) { m.sendFails.WithLabelValues(channel).Inc() }
