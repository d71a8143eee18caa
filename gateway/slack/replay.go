package slack

import (
	"sync"
	"time"
)

// A signed Slack request stays valid for five minutes, so a captured one
// could be sent again within that window: the signature cannot tell. We
// remember what we handled for longer than the window, and a second copy
// is acknowledged and ignored.
const (
	replayTTL = 10 * time.Minute
	// replayMax bounds memory; past it the oldest keys go first. Slack sends
	// far fewer requests than this in ten minutes to one gateway.
	replayMax = 20000
)

// replayCache is a set of keys with insertion-order expiry.
type replayCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	now   func() time.Time
	seen  map[string]time.Time
	order []string // insertion order; times are non-decreasing along it
}

func newReplayCache(ttl time.Duration, max int, now func() time.Time) *replayCache {
	return &replayCache{ttl: ttl, max: max, now: now, seen: map[string]time.Time{}}
}

// firstTime records keys and reports whether none of them was seen before.
// Empty keys are ignored. A request is identified by more than one key
// (the body's hash, and the click's own ids) so that the same click sent
// over two transports, or re-signed, is still caught.
func (c *replayCache) firstTime(keys ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	for len(c.order) > 0 && (len(c.order) >= c.max || now.Sub(c.seen[c.order[0]]) > c.ttl) {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if _, ok := c.seen[k]; ok {
			return false
		}
	}
	for _, k := range keys {
		if k != "" {
			c.seen[k] = now
			c.order = append(c.order, k)
		}
	}
	return true
}
