//go:build soak

package soak

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// faultMode is what the proxy does to every call.
type faultMode int32

const (
	modeHealthy faultMode = iota
	mode500               // an HTML 500 page, as a broken load balancer answers
	modeHang              // no answer until the client gives up
	mode429               // ok:false ratelimited with Retry-After
)

// faultProxy stands in front of the fake Slack (or Discord's REST API) and breaks it by the
// clock: slacktest queues failures per call, and an outage is a span of
// time, whatever the number of calls the gateway makes in it.
type faultProxy struct {
	URL        string
	srv        *httptest.Server
	tr         *http.Transport
	mode       atomic.Int32
	retryAfter atomic.Int32
	done       chan struct{}
	closeOnce  sync.Once

	mu     sync.Mutex
	counts map[faultMode]int
	at429  []time.Time
}

func newFaultProxy(target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	p := &faultProxy{done: make(chan struct{}), counts: map[faultMode]int{},
		tr: http.DefaultTransport.(*http.Transport).Clone()}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = p.tr
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := faultMode(p.mode.Load())
		p.mu.Lock()
		p.counts[m]++
		if m == mode429 {
			p.at429 = append(p.at429, time.Now())
		}
		p.mu.Unlock()
		switch m {
		case mode500:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("<html><body>500 upstream down</body></html>"))
		case modeHang:
			select {
			case <-r.Context().Done():
			case <-p.done:
			}
		case mode429:
			w.Header().Set("Retry-After", strconv.Itoa(int(p.retryAfter.Load())))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			// Slack's and Discord's shapes at once: each client reads its own.
			_, _ = fmt.Fprintf(w, `{"ok":false,"error":"ratelimited","message":"You are being rate limited.","retry_after":%d,"global":false}`,
				p.retryAfter.Load())
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	p.URL = p.srv.URL
	return p
}

func (p *faultProxy) set(m faultMode) { p.mode.Store(int32(m)) }

func (p *faultProxy) count(m faultMode) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[m]
}

// minGap429 is the shortest time between two calls answered 429 within
// one storm (gaps longer than maxGap span two storms and are skipped).
func (p *faultProxy) minGap429(maxGap time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return minGap(p.at429, maxGap)
}

func minGap(at []time.Time, maxGap time.Duration) time.Duration {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	best := time.Duration(-1)
	for i := 1; i < len(at); i++ {
		if g := at[i].Sub(at[i-1]); g < maxGap && (best < 0 || g < best) {
			best = g
		}
	}
	return best
}

// Close releases hung calls and stops the proxy.
func (p *faultProxy) Close() {
	p.closeOnce.Do(func() {
		close(p.done)
		p.srv.Close()
		p.tr.CloseIdleConnections()
	})
}
