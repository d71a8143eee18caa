package gateway

import (
	"sync"
	"time"
)

// Login throttling: wrong attempts are counted per source address and per
// web user; past throttleFree of them within throttleForget, each further
// wrong one is answered 429 with a Retry-After that doubles (1 s, 2 s, …,
// throttleMax). A right credential is always checked and always gets in:
// there is no lockout a stranger can put the owner under. What stops
// guessing is the credentials' size (login links are 256 random bits,
// tokens 24 characters or more); the throttle tells a guesser to slow
// down and keeps its noise visible in the log.
const (
	throttleFree   = 5
	throttleMax    = 5 * time.Minute
	throttleForget = 15 * time.Minute
	throttleKeys   = 10000 // past it, forgotten keys are dropped
)

type throttle struct {
	mu   sync.Mutex
	now  func() time.Time
	keys map[string]*failures
}

type failures struct {
	n    int
	last time.Time
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, keys: map[string]*failures{}}
}

// fail records a wrong attempt from src for user ("" when the attempt
// names none) and returns how long the client is told to wait.
func (t *throttle) fail(src, user string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if len(t.keys) > throttleKeys {
		for k, f := range t.keys {
			if now.Sub(f.last) > throttleForget {
				delete(t.keys, k)
			}
		}
	}
	var wait time.Duration
	for _, k := range []string{"src\x00" + src, "user\x00" + user} {
		if k == "user\x00" {
			continue
		}
		f := t.keys[k]
		if f == nil || now.Sub(f.last) > throttleForget {
			f = &failures{}
			t.keys[k] = f
		}
		f.n++
		f.last = now
		if f.n > throttleFree {
			d := throttleMax
			if shift := f.n - throttleFree - 1; shift < 9 {
				d = min(time.Second<<shift, throttleMax)
			}
			wait = max(wait, d)
		}
	}
	return wait
}

// succeed forgets the failures of src and user after a right credential.
func (t *throttle) succeed(src, user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, "src\x00"+src)
	delete(t.keys, "user\x00"+user)
}
