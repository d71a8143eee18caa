package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// benchClients is the number of concurrent keep-alive clients of the
// throughput benchmarks (issue 3).
const benchClients = 64

// loadResult is what one load run measured.
type loadResult struct {
	n       int
	elapsed time.Duration
	lat     []time.Duration // sorted
	errs    int64
	cpu     time.Duration // process CPU time (user+system) over the run: client and server
}

// cpuTime is the CPU time this process used so far. The machine may be
// shared, so besides requests/s the benchmarks report CPU per request,
// which other load on the machine does not change.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r loadResult) cpuPerReq() time.Duration { return r.cpu / time.Duration(max(r.n, 1)) }

func (r loadResult) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r loadResult) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(float64(len(r.lat))*p+0.5) - 1
	return r.lat[min(max(i, 0), len(r.lat)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchTransport is a keep-alive client able to hold benchClients
// connections to one host.
func benchClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: benchClients, MaxIdleConns: benchClients, IdleConnTimeout: time.Minute,
	}}
}

// runLoad sends n requests from benchClients goroutines, each reusing its
// keep-alive connection, and times every one. mk builds request i.
func runLoad(tb testing.TB, client *http.Client, n int, wantStatus int, mk func(i int) *http.Request) loadResult {
	tb.Helper()
	return runLoadN(tb, client, benchClients, n, wantStatus, mk)
}

// runLoadN is runLoad with clients concurrent clients.
func runLoadN(tb testing.TB, client *http.Client, clients, n int, wantStatus int, mk func(i int) *http.Request) loadResult {
	tb.Helper()
	var next, errs atomic.Int64
	lats := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	cpu0 := cpuTime()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := make([]time.Duration, 0, n/clients+1)
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				req := mk(i)
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != wantStatus {
						err = fmt.Errorf("status %d, want %d", resp.StatusCode, wantStatus)
					}
				}
				own = append(own, time.Since(t0))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
			lats[c] = own
		}()
	}
	wg.Wait()
	res := loadResult{n: n, elapsed: time.Since(start), errs: errs.Load(), cpu: cpuTime() - cpu0}
	for _, l := range lats {
		res.lat = append(res.lat, l...)
	}
	slices.Sort(res.lat)
	if e := firstErr.Load(); e != nil {
		tb.Fatalf("%d of %d requests failed; first: %v", res.errs, n, e)
	}
	return res
}

// trivialServer is the baseline: a net/http handler that reads the body
// and answers a small JSON object, on a real loopback listener.
func trivialServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"outcome":"allowed"}` + "\n"))
	})}
	go func() { _ = hs.Serve(ln) }()
	tb.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

var (
	checkBody = benchJSON(jsonBody{"capability": "fs:read", "target": "/srv/data/report.pdf",
		"intent": "read the report", "executor": "report_reader", "args": map[string]any{"path": "report.pdf"}})
	trivialBody = checkBody
)

func benchJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func benchPost(url, tok string, body []byte) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Content-Type", "application/json")
	return r
}

// decidedNowReq is a POST /v1/requests that policy allows at once (it is
// stored, with its audit row) under a call_id never used before.
func decidedNowReq(url string, run, i int) *http.Request {
	body := fmt.Appendf(nil, `{"call_id":"bench-%d-%d","capability":"llm:local","intent":"summarise locally",`+
		`"executor":"summariser","args":{"text":"x"}}`, run, i)
	return benchPost(url+"/v1/requests", tokBench, body)
}

var benchRun atomic.Int64 // keeps call_ids unique across b.N rounds

func reportLoad(b *testing.B, name string, r loadResult) {
	b.ReportMetric(r.rps(), name+"_req/s")
	b.ReportMetric(msOf(r.pct(0.99)), name+"_p99_ms")
	b.ReportMetric(float64(r.cpuPerReq())/1e3, name+"_cpu_us/req")
}

// warm makes every client open its connection before timing starts.
func warm(tb testing.TB, client *http.Client, status int, mk func(i int) *http.Request) {
	runLoad(tb, client, 4*benchClients, status, mk)
}

// BenchmarkTrivialHandler64 is the baseline alone.
func BenchmarkTrivialHandler64(b *testing.B) {
	url := trivialServer(b)
	client := benchClient()
	defer client.CloseIdleConnections()
	mk := func(int) *http.Request { return benchPost(url+"/v1/check", tokBench, trivialBody) }
	warm(b, client, http.StatusOK, mk)
	b.ResetTimer()
	r := runLoad(b, client, b.N, http.StatusOK, mk)
	b.StopTimer()
	reportLoad(b, "trivial", r)
}

// BenchmarkCheck64 is POST /v1/check from 64 keep-alive clients.
func BenchmarkCheck64(b *testing.B) {
	g := startE2E(b, e2eOptions{})
	client := benchClient()
	defer client.CloseIdleConnections()
	mk := func(int) *http.Request { return benchPost(g.URL+"/v1/check", tokBench, checkBody) }
	warm(b, client, http.StatusOK, mk)
	b.ResetTimer()
	r := runLoad(b, client, b.N, http.StatusOK, mk)
	b.StopTimer()
	reportLoad(b, "check", r)
}

// BenchmarkCheck64Postgres is BenchmarkCheck64 on PostgreSQL: every
// decision waits for a read of the change counters that started after it
// arrived (the read barrier, storage/pgversion.go).
func BenchmarkCheck64Postgres(b *testing.B) {
	p := startPGBench(b)
	client := benchClient()
	defer client.CloseIdleConnections()
	mk := func(int) *http.Request { return benchPost(p.g.URL+"/v1/check", tokBench, checkBody) }
	warm(b, client, http.StatusOK, mk)
	before := p.usage(b)
	b.ResetTimer()
	r := runLoad(b, client, b.N, http.StatusOK, mk)
	b.StopTimer()
	before.report(b, "check", p.usage(b), r.n)
	reportLoad(b, "check", r)
	b.ReportMetric(msOf(r.pct(0.5)), "check_p50_ms")
}

// BenchmarkRequestsDecidedNow64Postgres is BenchmarkRequestsDecidedNow64
// on PostgreSQL: each request a row and an audit row in a group commit.
func BenchmarkRequestsDecidedNow64Postgres(b *testing.B) { benchDecidedNowPG(b, benchClients) }

// BenchmarkRequestsDecidedNow64 is POST /v1/requests that policy decides
// at once (each one a committed write) from 64 keep-alive clients.
func BenchmarkRequestsDecidedNow64(b *testing.B) {
	g := startE2E(b, e2eOptions{})
	client := benchClient()
	defer client.CloseIdleConnections()
	run := int(benchRun.Add(1))
	warm(b, client, http.StatusOK, func(i int) *http.Request { return decidedNowReq(g.URL, -run, i) })
	b.ResetTimer()
	r := runLoad(b, client, b.N, http.StatusOK, func(i int) *http.Request { return decidedNowReq(g.URL, run, i) })
	b.StopTimer()
	reportLoad(b, "requests", r)
}

// throughputRounds interleaves the three loads, so a change of load on a
// shared machine hits all three alike; ratios are the median of the rounds.
const throughputRounds = 5

// BenchmarkThroughputVsBaseline runs the trivial handler, /v1/check and
// decided-now /v1/requests in the same process, interleaved in rounds of
// b.N/5 requests each, and reports each one's rate and p99 and the median
// ratios to the baseline (issue 3: check ≥ 0.5, requests ≥ 0.3, p99 ≤ 5 ms).
// The _by_cpu ratios compare CPU time per request (client and server, in
// this process), which other load on the machine does not change.
func BenchmarkThroughputVsBaseline(b *testing.B) {
	trivialURL := trivialServer(b)
	g := startE2E(b, e2eOptions{})
	client := benchClient()
	defer client.CloseIdleConnections()
	run := int(benchRun.Add(1))
	trivial := func(int) *http.Request { return benchPost(trivialURL+"/v1/check", tokBench, trivialBody) }
	check := func(int) *http.Request { return benchPost(g.URL+"/v1/check", tokBench, checkBody) }
	warm(b, client, http.StatusOK, trivial)
	warm(b, client, http.StatusOK, check)
	warm(b, client, http.StatusOK, func(i int) *http.Request { return decidedNowReq(g.URL, -run, i) })
	n := max(b.N/throughputRounds, benchClients)
	var all [3]loadResult
	var ratioC, ratioR, cpuC, cpuR []float64
	b.ResetTimer()
	for round := range throughputRounds {
		rt := runLoad(b, client, n, http.StatusOK, trivial)
		rc := runLoad(b, client, n, http.StatusOK, check)
		rr := runLoad(b, client, n, http.StatusOK, func(i int) *http.Request { return decidedNowReq(g.URL, run, round*n+i) })
		for i, r := range []loadResult{rt, rc, rr} {
			all[i].n += r.n
			all[i].elapsed += r.elapsed
			all[i].cpu += r.cpu
			all[i].lat = append(all[i].lat, r.lat...)
		}
		ratioC, ratioR = append(ratioC, rc.rps()/rt.rps()), append(ratioR, rr.rps()/rt.rps())
		cpuC = append(cpuC, float64(rt.cpuPerReq())/float64(rc.cpuPerReq()))
		cpuR = append(cpuR, float64(rt.cpuPerReq())/float64(rr.cpuPerReq()))
	}
	b.StopTimer()
	for i, name := range []string{"trivial", "check", "requests"} {
		slices.Sort(all[i].lat)
		reportLoad(b, name, all[i])
	}
	median := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(median(ratioC), "check/trivial")
	b.ReportMetric(median(ratioR), "requests/trivial")
	b.ReportMetric(median(cpuC), "check/trivial_by_cpu")
	b.ReportMetric(median(cpuR), "requests/trivial_by_cpu")
}

// BenchmarkServiceTime_OneClient is the same three calls from a single
// client: the latency of one request with no queue in front of it, which
// the 64-client p99 adds its queueing to.
func BenchmarkServiceTime_OneClient(b *testing.B) {
	trivialURL := trivialServer(b)
	g := startE2E(b, e2eOptions{})
	client := benchClient()
	defer client.CloseIdleConnections()
	run := int(benchRun.Add(1))
	loads := []struct {
		name string
		mk   func(i int) *http.Request
	}{
		{"trivial", func(int) *http.Request { return benchPost(trivialURL+"/v1/check", tokBench, trivialBody) }},
		{"check", func(int) *http.Request { return benchPost(g.URL+"/v1/check", tokBench, checkBody) }},
		{"requests", func(i int) *http.Request { return decidedNowReq(g.URL, run, i) }},
	}
	b.ResetTimer()
	for _, l := range loads {
		runLoadN(b, client, 1, 100, http.StatusOK, func(i int) *http.Request { return l.mk(-1 - i) })
		r := runLoadN(b, client, 1, b.N, http.StatusOK, l.mk)
		b.ReportMetric(msOf(r.pct(0.50)), l.name+"_p50_ms")
		b.ReportMetric(msOf(r.pct(0.99)), l.name+"_p99_ms")
	}
	b.ReportMetric(0, "ns/op")
}

// benchPending submits n pending requests for agent bench straight through
// the service (fast), and returns them.
func benchPending(b *testing.B, g *e2eGateway, n int, prefix string) []approvals.Request {
	b.Helper()
	a := g.App.Server.AgentByID("bench")
	out := make([]approvals.Request, 0, n)
	for i := range n {
		r, _, err := g.App.Service.Submit(context.Background(), approvals.Submission{
			Profile: a.Profile(), CallID: fmt.Sprintf("%s-%d", prefix, i), Capability: "fs:read",
			Target: fmt.Sprintf("/srv/data/%s-%d.txt", prefix, i), Channel: a.Channel, SenderID: a.SenderID,
			Intent: "read the report file", Executor: "report_reader", Timeout: time.Hour,
		})
		if err != nil || r.Status != approvals.StatusPending {
			b.Fatalf("submit %d: %v (status %s)", i, err, r.Status)
		}
		out = append(out, r)
	}
	return out
}

// BenchmarkDecisionToWaiter_LongPoll: 1,000 pending requests, each with an
// agent long-polling GET /v1/requests/{id}?wait=…; every iteration decides
// one and measures until its agent has read the answer. The clock starts
// before the Decide call, so the figure includes the commit itself.
func BenchmarkDecisionToWaiter_LongPoll(b *testing.B) {
	g := startE2E(b, e2eOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1000}}
	defer client.CloseIdleConnections()
	const batch = 1000
	type parked struct {
		r   approvals.Request
		got chan time.Time
	}
	park := func(prefix string) []parked {
		out := make([]parked, 0, batch)
		for _, r := range benchPending(b, g, batch, prefix) {
			p := parked{r: r, got: make(chan time.Time, 1)}
			go func() {
				req, _ := http.NewRequest(http.MethodGet, g.URL+"/v1/requests/"+r.ID+"?wait=5m", nil)
				req.Header.Set("Authorization", "Bearer "+tokBench)
				resp, err := client.Do(req)
				if err != nil {
					p.got <- time.Time{}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				p.got <- time.Now()
			}()
			out = append(out, p)
		}
		time.Sleep(500 * time.Millisecond) // let every long-poll park
		return out
	}
	waiting := park("lp")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if i > 0 && i%batch == 0 {
			b.StopTimer()
			waiting = park(fmt.Sprint("lp", i))
			b.StartTimer()
		}
		p := waiting[i%batch]
		t0 := time.Now()
		if _, err := g.App.Service.Decide(context.Background(), p.r.ID, approvals.AllowOnce,
			approvals.Actor{Channel: "web", ID: "bench"}); err != nil {
			b.Fatalf("decide: %v", err)
		}
		at := <-p.got
		if at.IsZero() {
			b.Fatal("long-poll failed")
		}
		lat = append(lat, at.Sub(t0))
	}
	b.StopTimer()
	// Answer the long-polls left parked, so the server stops promptly.
	if rest := b.N % batch; rest != 0 {
		for _, p := range waiting[rest:] {
			_, _ = g.App.Service.Decide(context.Background(), p.r.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "bench"})
			<-p.got
		}
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	r := loadResult{lat: lat}
	b.ReportMetric(msOf(r.pct(0.50)), "p50_ms")
	b.ReportMetric(msOf(r.pct(0.99)), "p99_ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDecisionToWaiter_SSE: 1,000 pending requests stay pending
// while an agent reads /v1/events; every iteration submits one more,
// decides it and measures until the agent has read its approval_resolved
// event. The clock starts before the Decide call (it includes the commit).
func BenchmarkDecisionToWaiter_SSE(b *testing.B) {
	g := startE2E(b, e2eOptions{})
	benchPending(b, g, 1000, "backlog")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tokBench)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	resolved := make(chan string, 16)
	connected := make(chan struct{})
	go func() {
		defer close(resolved)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ": connected":
				close(connected)
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && name == approvals.EventResolved:
				var ev struct{ ID string }
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev)
				resolved <- ev.ID
			}
		}
	}()
	<-connected
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		r := benchPending(b, g, 1, fmt.Sprint("sse", i))[0]
		t0 := time.Now()
		if _, err := g.App.Service.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "web", ID: "bench"}); err != nil {
			b.Fatalf("decide: %v", err)
		}
		id, ok := <-resolved
		if !ok || id != r.ID {
			b.Fatalf("resolved event %q (open %v), want %s", id, ok, r.ID)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS() (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/self/status")
}

// rssEnv selects the child role of BenchmarkRSS.
const rssEnv = "GATEWAY_BENCH_RSS_CHILD"

// rssFigures is what the child measured, in MB.
type rssFigures struct {
	IdleMB    float64 `json:"idle_mb"`
	PendingMB float64 `json:"pending_mb"`
	Pending   int     `json:"pending"`
}

// TestRSSChild is BenchmarkRSS's measuring process; it does nothing in a
// normal test run. A fresh process measures the gateway alone, not the
// heap earlier benchmarks grew.
func TestRSSChild(t *testing.T) {
	if os.Getenv(rssEnv) != "1" {
		t.Skip("run by BenchmarkRSS only")
	}
	g := startE2E(t, e2eOptions{})
	// Idle: started, served a few calls, then left alone for a moment.
	for i := range 10 {
		g.want(t, http.StatusOK, "POST", "/v1/requests", tokBench, jsonBody{"call_id": fmt.Sprint("warm-", i),
			"capability": "llm:local", "intent": "summarise locally", "executor": "summariser"})
		g.want(t, http.StatusOK, "POST", "/v1/check", tokBench, jsonBody{"capability": "fs:read", "target": "/srv/x"})
	}
	time.Sleep(2 * time.Second)
	var f rssFigures
	var err error
	if f.IdleMB, err = vmRSS(); err != nil {
		t.Fatal(err)
	}
	const n = 10000
	a := g.App.Server.AgentByID("bench")
	for i := range n {
		if _, _, err := g.App.Service.Submit(context.Background(), approvals.Submission{
			Profile: a.Profile(), CallID: fmt.Sprintf("p-%d", i), Capability: "fs:read",
			Target: fmt.Sprintf("/srv/data/pending-%d.txt", i), Channel: a.Channel, SenderID: a.SenderID,
			Intent: "read the report file", Executor: "report_reader", Timeout: time.Hour,
			Args: map[string]any{"path": "x"},
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The pending requests are read back: counted and listed, as the web page and metrics do.
	if c, err := g.App.Service.CountPending(context.Background()); err != nil || c != n {
		t.Fatalf("CountPending = %d, %v", c, err)
	}
	if _, err := g.App.Service.ListPending(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if f.PendingMB, err = vmRSS(); err != nil {
		t.Fatal(err)
	}
	f.Pending = n
	b, _ := json.Marshal(f)
	fmt.Printf("RSS %s\n", b)
}

// BenchmarkRSS reports the resident memory of a gateway idle and with
// 10,000 pending requests (issue 3: ≤ 40 MB and ≤ 200 MB), measured in a
// child process of this test binary. It is a figure, not a timing: one
// child whatever b.N.
func BenchmarkRSS(b *testing.B) {
	var f rssFigures
	{
		cmd := exec.Command(os.Args[0], "-test.run=^TestRSSChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), rssEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		found := false
		for line := range strings.SplitSeq(string(out), "\n") {
			if rest, ok := strings.CutPrefix(line, "RSS "); ok {
				found = json.Unmarshal([]byte(rest), &f) == nil
			}
		}
		if !found {
			b.Fatalf("no RSS line from the child:\n%s", out)
		}
	}
	b.ReportMetric(f.IdleMB, "idle_MB")
	b.ReportMetric(f.PendingMB, "10k_pending_MB")
	b.ReportMetric(0, "ns/op")
}
