package gateway

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps one token bucket per (agent, capability): burst = the
// configured count, refilled at count per period. Buckets live in this
// process; with several replicas each holds its own (see README).
type limiter struct {
	mu      sync.Mutex
	buckets map[limitKey]*rate.Limiter
	now     func() time.Time
}

// limitKey names a bucket: two strings, not their concatenation, which
// was an allocation on every request.
type limitKey struct{ agent, capability string }

func newLimiter(now func() time.Time) *limiter {
	return &limiter{buckets: map[limitKey]*rate.Limiter{}, now: now}
}

// allow takes a token; when none is left it says how long until one is.
// give gives the token back (when ok).
func (l *limiter) allow(a *Agent, capability string) (wait time.Duration, ok bool, give func()) {
	res, wait, ok := l.reserve(a, capability)
	switch {
	case !ok:
		return wait, false, nil
	case res == nil:
		return 0, true, func() {} // no limit configured
	}
	return 0, true, func() { res.CancelAt(l.now()) }
}

// take is allow for a token never given back: no closure to allocate.
func (l *limiter) take(a *Agent, capability string) (wait time.Duration, ok bool) {
	_, wait, ok = l.reserve(a, capability)
	return wait, ok
}

// reserve takes a token, its reservation nil when no limit is
// configured; when none is left it says how long until one is.
func (l *limiter) reserve(a *Agent, capability string) (res *rate.Reservation, wait time.Duration, ok bool) {
	if a.RateCount <= 0 || a.RatePer <= 0 {
		return nil, 0, true
	}
	key := limitKey{a.ID, capability}
	l.mu.Lock()
	b := l.buckets[key]
	if b == nil {
		b = rate.NewLimiter(rate.Limit(float64(a.RateCount)/a.RatePer.Seconds()), a.RateCount)
		l.buckets[key] = b
	}
	l.mu.Unlock()
	now := l.now()
	res = b.ReserveN(now, 1)
	if !res.OK() {
		return nil, a.RatePer, false
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return nil, d, false
	}
	return res, 0, true
}
