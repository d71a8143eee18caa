package web

import (
	"slices"
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
	// throttleKeys bounds the keys remembered: past it the forgotten ones
	// are dropped, then, when every key is recent (many sources at once),
	// the oldest tenth. A source evicted so starts afresh: the throttle
	// slows a guesser down, the credentials' size is what stops one.
	throttleKeys = 10000
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
	if len(t.keys) >= throttleKeys {
		t.evict(now)
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

// evict drops the forgotten keys and, when that leaves the map full, the
// oldest tenth, so that a run of new keys costs a sort every
// throttleKeys/10 of them.
func (t *throttle) evict(now time.Time) {
	for k, f := range t.keys {
		if now.Sub(f.last) > throttleForget {
			delete(t.keys, k)
		}
	}
	if len(t.keys) < throttleKeys {
		return
	}
	type aged struct {
		key  string
		last time.Time
	}
	all := make([]aged, 0, len(t.keys))
	for k, f := range t.keys {
		all = append(all, aged{k, f.last})
	}
	slices.SortFunc(all, func(a, b aged) int { return a.last.Compare(b.last) })
	for _, a := range all[:len(all)-throttleKeys*9/10] {
		delete(t.keys, a.key)
	}
}

// waiting is how long src is still told to wait after its last wrong
// attempt (0: it may try now).
func (t *throttle) waiting(src string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.keys["src\x00"+src]
	if f == nil || f.n <= throttleFree {
		return 0
	}
	d := throttleMax
	if shift := f.n - throttleFree - 1; shift < 9 {
		d = min(time.Second<<shift, throttleMax)
	}
	return max(f.last.Add(d).Sub(t.now()), 0)
}

// succeed forgets the failures of src and user after a right credential.
func (t *throttle) succeed(src, user string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, "src\x00"+src)
	delete(t.keys, "user\x00"+user)
}
