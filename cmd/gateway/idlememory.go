// Returning an idle gateway's free memory to the system.

package main

import (
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// An idle gateway still allocates, a little: the expiry sweep every
// second, the leader's lease, about 1 MiB a minute in all. With
// serveGCPercent the collector waits for the heap to grow to several
// times the live data (16 MiB at least) before it collects, so an idle
// gateway's memory grows for minutes and keeps what it grew to. Every
// idleCheckEvery, if less than idleAllocBytes was allocated since the last
// check (idle: a few decisions a second allocate more) and the heap holds
// more than idleSpareBytes it does not need (garbage, and free pages not
// yet returned), serve collects and returns the free pages, and releases
// the executable's pages again (releaseExecutablePages): the collection
// read the function tables of every goroutine's stack and mapped them. A
// busy gateway is never collected this way.
const (
	idleCheckEvery = 30 * time.Second
	idleAllocBytes = 4 << 20
	idleSpareBytes = 2 << 20
)

// returnMemoryWhenIdle checks every idleCheckEvery until stop is called.
func returnMemoryWhenIdle(log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(idleCheckEvery)
		defer t.Stop()
		last := readHeapUse()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				now := readHeapUse()
				if now.idleSince(last) {
					debug.FreeOSMemory()
					releaseExecutableNow(log)
					now = readHeapUse()
				}
				last = now
			}
		}
	}()
	return func() { close(done) }
}

// heapUse is what returnMemoryWhenIdle reads of the runtime.
type heapUse struct {
	allocated uint64 // bytes allocated since the process started
	objects   uint64 // bytes of heap objects, garbage not yet swept included
	live      uint64 // bytes live after the last collection
	free      uint64 // bytes of free heap pages not returned to the system
}

func readHeapUse() heapUse {
	s := []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	var v [4]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return heapUse{allocated: v[0], objects: v[1], live: v[2], free: v[3]}
}

// idleSince reports whether the gateway was idle since before (it
// allocated less than idleAllocBytes) and holds more than idleSpareBytes
// it does not need.
func (u heapUse) idleSince(before heapUse) bool {
	spare := u.free
	if u.objects > u.live {
		spare += u.objects - u.live
	}
	return u.allocated-before.allocated < idleAllocBytes && spare > idleSpareBytes
}
