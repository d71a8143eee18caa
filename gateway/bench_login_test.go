package gateway_test

import (
	"context"

	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loginFloodSources is how many loopback addresses the flood of
// BenchmarkPasskeyLoginFlood comes from (each 127.1.x.y).
const loginFloodSources = 2000

// floodLogins sends POST /login/passkey/begin to the gateway at url from
// clients goroutines, each request on a new connection from the next of
// loginFloodSources loopback addresses, until ctx ends; it returns how
// many were answered.
func floodLogins(ctx context.Context, url string, clients int) (answered *atomic.Int64, wait func()) {
	answered = new(atomic.Int64)
	var next atomic.Int64
	host := "localhost" + url[strings.LastIndexByte(url, ':'):] // the page's relying party is localhost
	csrf := strings.Repeat("f", 40)                             // the login form's double-submit token
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		i := next.Add(1) % loginFloodSources
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}}
		return d.DialContext(ctx, network, addr)
	}}
	c := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/login/passkey/begin", strings.NewReader("csrf="+csrf))
				req.Host = host
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Cookie", "gw_login="+csrf)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered.Add(1)
			}
		}()
	}
	return answered, func() { wg.Wait(); tr.CloseIdleConnections() }
}

// BenchmarkPasskeyLoginFlood: the p99 of other writes (decided-now POST
// /v1/requests from 8 keep-alive clients) on a quiet gateway, then while
// 16 clients flood POST /login/passkey/begin (no login needed) from 2,000
// loopback addresses, each begin on a new connection. Issue 38 asks the
// flood's p99 to stay within 2× of the quiet one: reported as
// flood/quiet_p99, with the begins answered per second and the sign-in
// challenges stored (at most passkeys.MaxLogins).
func BenchmarkPasskeyLoginFlood(b *testing.B) {
	g := startE2E(b, e2eOptions{})
	client := benchClient()
	defer client.CloseIdleConnections()
	run := int(benchRun.Add(1))
	mk := func(i int) *http.Request { return decidedNowReq(g.URL, run, i) }
	n := max(b.N, 3000)
	warm(b, client, http.StatusOK, func(i int) *http.Request { return decidedNowReq(g.URL, -run, i) })
	b.ResetTimer()
	quiet := runLoadN(b, client, 8, n, http.StatusOK, mk)
	ctx, stop := context.WithCancel(context.Background())
	answered, wait := floodLogins(ctx, g.URL, 16)
	start := time.Now()
	flood := runLoadN(b, client, 8, n, http.StatusOK, func(i int) *http.Request { return mk(n + i) })
	elapsed := time.Since(start)
	stop()
	wait()
	b.StopTimer()
	var stored int
	if err := g.App.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM passkey_ceremonies`).Scan(&stored); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(msOf(quiet.pct(0.99)), "quiet_p99_ms")
	b.ReportMetric(msOf(flood.pct(0.99)), "flood_p99_ms")
	b.ReportMetric(float64(flood.pct(0.99))/float64(quiet.pct(0.99)), "flood/quiet_p99")
	b.ReportMetric(float64(answered.Load())/elapsed.Seconds(), "begins/s")
	b.ReportMetric(float64(stored), "challenges_stored")
	b.ReportMetric(0, "ns/op")
	if stored > 1000 {
		b.Fatalf("%d sign-in challenges stored", stored)
	}
}
