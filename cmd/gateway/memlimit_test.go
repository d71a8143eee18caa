package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// TestMemoryLimit_FollowsTheLiveHeap: the floor while the live heap is
// small; above it, a limit the live heap fits in two and a half times,
// set again after a collection.
func TestMemoryLimit_FollowsTheLiveHeap(t *testing.T) {
	if got := memoryLimitFor(1 << 20); got != memLimitFloor {
		t.Errorf("limit for 1 MiB live = %d, want the floor %d", got, memLimitFloor)
	}
	if got := memoryLimitFor(100 << 20); got != 250<<20 {
		t.Errorf("limit for 100 MiB live = %d, want 250 MiB", got)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	followMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got < memLimitFloor {
		t.Fatalf("limit %d below the floor", got)
	}
	// A live heap of 40 MiB: after a collection the limit is 100 MiB or more.
	live := make([][]byte, 40)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	refreshMemoryLimit()
	if got := debug.SetMemoryLimit(-1); got < 100<<20 {
		t.Errorf("with 40 MiB live the limit is %d", got)
	}
	runtime.KeepAlive(live)
}
