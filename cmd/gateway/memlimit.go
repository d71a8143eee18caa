// The soft memory limit of `gateway serve`.

package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The soft limit on the Go runtime's memory is the larger of memLimitFloor
// and memLimitPerLive times the heap that survived the last collection,
// set again after every collection. The collector keeps its lazy GOGC
// pace (serveGCPercent) while the heap is small, and works harder as the
// total nears the limit, instead of letting a burst of load grow the heap
// to five times the live data and keep it. Following the live heap, the
// limit never makes the collector run without pause: a gateway with
// hundreds of thousands of grants cached gets a limit its heap fits in
// (a fixed limit below the live heap would have it collect all the time,
// the runtime capping that at half the CPU). The limit counts stacks and
// the runtime's own memory too: with a floor of 20 MiB the soak's 1,000
// agents left the collector too little room, the gateway fell behind
// under load and its backlog grew the memory it was meant to save.
const (
	memLimitFloor   = 24 << 20
	memLimitPerLive = 2.5
)

var followOnce sync.Once

// followMemoryLimit sets the limit and keeps it following the live heap,
// once per process.
func followMemoryLimit() {
	followOnce.Do(func() {
		debug.SetMemoryLimit(memoryLimitFor(0))
		armMemoryLimit()
	})
}

// gcSentinel is unreachable as soon as it is made: its cleanup runs after
// the next collection. A pointer keeps it out of the tiny allocator, whose
// blocks may outlive their objects.
type gcSentinel struct{ _ *int }

// armMemoryLimit re-sets the limit after the next collection, and arms
// itself again.
func armMemoryLimit() {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		refreshMemoryLimit()
		armMemoryLimit()
	}, struct{}{})
}

// refreshMemoryLimit sets the limit for the heap live after the last
// collection.
func refreshMemoryLimit() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		debug.SetMemoryLimit(memoryLimitFor(sample[0].Value.Uint64()))
	}
}

// memoryLimitFor is the limit for a live heap of live bytes.
func memoryLimitFor(live uint64) int64 {
	return max(memLimitFloor, int64(float64(live)*memLimitPerLive))
}
