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
	if a.RateCount <= 0 || a.RatePer <= 0 {
		return 0, true, func() {} // no limit configured
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
	res := b.ReserveN(now, 1)
	if !res.OK() {
		return a.RatePer, false, nil
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false, nil
	}
	return 0, true, func() { res.CancelAt(l.now()) }
}
