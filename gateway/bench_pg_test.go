package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/storage/storagetest"
)

// pgBench is a gateway on a fresh PostgreSQL schema whose sessions carry
// an application_name of their own, so that the server processes serving
// it can be found and their CPU time counted beside the gateway's.
type pgBench struct {
	g   *e2eGateway
	dsn string // the test server's, to ask pg_stat_activity
	app string
}

func startPGBench(b *testing.B) *pgBench {
	b.Helper()
	dsn := storagetest.FreshSchema(b) // skips, saying why, without a server
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	app := "gateway-bench-" + hex.EncodeToString(tag[:])
	gdsn := storagetest.WithParam(dsn, "application_name", app)
	g := startE2E(b, e2eOptions{mutate: func(cfg *config.Config) { cfg.Storage.Driver, cfg.Storage.DSN = "postgres", gdsn }})
	return &pgBench{g: g, dsn: storagetest.PostgresDSN(b), app: app}
}

// serverUsage is the CPU time (user+system) and the voluntary context
// switches (each a wait for the next message: about one per round trip)
// of the server processes serving the gateway, summed; ok is false when
// the server's processes cannot be read (another machine).
type serverUsage struct {
	cpu      time.Duration
	switches int64
	ok       bool
}

// usage reads the server processes' counters. The pool's sessions may
// change during a run; a process gone since is left out, one that started
// counts from its start.
func (p *pgBench) usage(b *testing.B) serverUsage {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		b.Fatalf("server usage: %v", err)
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, p.app)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatalf("server usage: %v", err)
	}
	u := serverUsage{ok: len(pids) > 0}
	for _, pid := range pids {
		cpu, sw, ok := procUsage(int(pid))
		u.cpu += cpu
		u.switches += sw
		u.ok = u.ok && ok
	}
	return u
}

// procUsage reads one process's utime+stime (/proc/PID/stat, in clock
// ticks of 10 ms) and voluntary context switches (/proc/PID/status).
func procUsage(pid int) (cpu time.Duration, switches int64, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 14 {
		return 0, 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14 of the line
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, false
	}
	for line := range strings.Lines(string(status)) {
		if v, found := strings.CutPrefix(line, "voluntary_ctxt_switches:"); found {
			switches, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, switches, true
}

// report adds the server's share of the run between before and after.
func (u serverUsage) report(b *testing.B, name string, after serverUsage, n int) {
	if !u.ok || !after.ok || n == 0 {
		return
	}
	b.ReportMetric(float64(after.cpu-u.cpu)/1e3/float64(n), name+"_server_cpu_us/req")
	b.ReportMetric(float64(after.switches-u.switches)/float64(n), name+"_server_waits/req")
}

// BenchmarkRequestsDecidedNow1Postgres is one client's sequential
// decided-now requests on PostgreSQL: the latency floor of a request (its
// version read, then its group's two round trips) and the server's CPU
// for a group of one.
func BenchmarkRequestsDecidedNow1Postgres(b *testing.B) { benchDecidedNowPG(b, 1) }

// benchDecidedNowPG is decided-now requests on PostgreSQL from clients
// keep-alive clients, with the gateway's and the server's CPU per request
// and the p50.
func benchDecidedNowPG(b *testing.B, clients int) {
	p := startPGBench(b)
	client := benchClient()
	defer client.CloseIdleConnections()
	run := int(benchRun.Add(1))
	warm(b, client, http.StatusOK, func(i int) *http.Request { return decidedNowReq(p.g.URL, -run, i) })
	before := p.usage(b)
	b.ResetTimer()
	r := runLoadN(b, client, clients, b.N, http.StatusOK, func(i int) *http.Request { return decidedNowReq(p.g.URL, run, i) })
	b.StopTimer()
	before.report(b, "requests", p.usage(b), r.n)
	reportLoad(b, "requests", r)
	b.ReportMetric(msOf(r.pct(0.5)), "requests_p50_ms")
}
