package approvals

import (
	"syscall"
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

// CPUTime is the CPU time (user and system) this process used so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
