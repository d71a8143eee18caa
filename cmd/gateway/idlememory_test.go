package main

import (
	"runtime"
	"testing"
)

// TestIdleMemory_CollectsOnlyWhenIdleWithSpare: serve collects and returns
// free pages only when little was allocated since the last check and the
// heap holds more than idleSpareBytes it does not need; a busy gateway, or
// an idle one with nothing to return, is left alone.
func TestIdleMemory_CollectsOnlyWhenIdleWithSpare(t *testing.T) {
	before := heapUse{allocated: 100 << 20}
	for _, c := range []struct {
		name string
		now  heapUse
		want bool
	}{
		{"idle, garbage", heapUse{allocated: 101 << 20, objects: 8 << 20, live: 3 << 20}, true},
		{"idle, free pages kept", heapUse{allocated: 101 << 20, objects: 3 << 20, live: 3 << 20, free: 6 << 20}, true},
		{"idle, nothing spare", heapUse{allocated: 101 << 20, objects: 4 << 20, live: 3 << 20}, false},
		{"busy", heapUse{allocated: 100<<20 + idleAllocBytes, objects: 30 << 20, live: 3 << 20}, false},
		{"before the first collection", heapUse{allocated: 101 << 20, objects: 5 << 20}, true},
	} {
		if got := c.now.idleSince(before); got != c.want {
			t.Errorf("%s: idleSince = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestIdleMemory_ReadsTheRuntime: the runtime gives the figures idleSince
// reads; after a collection the 4 MiB kept are allocated, live and among
// the heap's objects.
func TestIdleMemory_ReadsTheRuntime(t *testing.T) {
	keep := make([]byte, 4<<20)
	runtime.GC()
	u := readHeapUse()
	if u.allocated < 4<<20 || u.live < 4<<20 || u.objects < 4<<20 {
		t.Errorf("heap use %+v: want at least the 4 MiB kept, allocated and live", u)
	}
	runtime.KeepAlive(keep)
}
