package web

import (
	"fmt"
	"testing"
	"time"
)

// TestThrottle_Bounded: wrong attempts from more sources than the
// throttle remembers, all within throttleForget, keep its memory at
// throttleKeys at most, the oldest evicted first; the newest keep their
// count (and their wait).
func TestThrottle_Bounded(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	th := newThrottle(func() time.Time { return now })
	for i := range 5 * throttleKeys {
		now = now.Add(time.Millisecond)
		th.fail(fmt.Sprintf("src-%d", i), "")
		if n := th.size(); n > throttleKeys {
			t.Fatalf("after %d sources the throttle holds %d keys, past %d", i+1, n, throttleKeys)
		}
	}
	last := fmt.Sprintf("src-%d", 5*throttleKeys-1)
	for range throttleFree {
		th.fail(last, "")
	}
	if wait := th.fail(last, ""); wait != 2*time.Second {
		t.Errorf("the newest source's wait is %s after %d failures, want 2s", wait, throttleFree+2)
	}
	if _, ok := th.keys["src\x00src-0"]; ok {
		t.Error("the oldest source is still remembered")
	}
}

// size is how many keys the throttle remembers.
func (t *throttle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys)
}
