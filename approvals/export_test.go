package approvals

import (
	"testing"
	"time"
)

// SetIdleRecheck makes the dispatchers' idle recheck d until the test
// ends, so that a card that comes at once was woken, not rechecked. Call
// it before any dispatcher runs.
func SetIdleRecheck(t testing.TB, d time.Duration) {
	old := idleRecheck
	idleRecheck = d
	t.Cleanup(func() { idleRecheck = old })
}
