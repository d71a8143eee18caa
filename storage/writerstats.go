package storage

import (
	"sync/atomic"
	"time"
)

// WriterStats is what the group writer (GroupTx, GroupExec) and, on
// SQLite, the checkpointer did since the database was opened: the figures
// that say whether the one writer is what holds the rate of writes back.
// Over an interval, Calls/Groups is the mean group's size and Busy, Gather,
// SlotWait and CheckpointHold divided by the interval are the share of it
// the writer spent committing, waiting for a group, waiting for the write
// slot, and the share the checkpointer held that slot.
type WriterStats struct {
	Groups uint64 // transactions the group writer committed or tried
	Calls  uint64 // the calls they held
	// Busy is the time spent running the groups' transactions, from BEGIN
	// to the end of the COMMIT (their wait for the write slot excluded).
	Busy time.Duration
	// Gather is the time the writer waited, between groups, for the next
	// group to be as large as the last (SQLite; see gather).
	Gather time.Duration
	// SlotWait is the time the groups waited for this process's write slot
	// (SQLite: held by InTx, or by the checkpointer).
	SlotWait time.Duration
	// CheckpointHold is the time the checkpointer held the write slot for
	// its second pass (SQLite; see runCheckpoints): every write of this
	// process waits meanwhile.
	CheckpointHold time.Duration
}

// writerStats are WriterStats' counters.
type writerStats struct {
	groups, calls                          atomic.Uint64
	busy, gather, slotWait, checkpointHold atomic.Int64 // nanoseconds
}

// WriterStats reads the group writer's and the checkpointer's counters.
func (db *DB) WriterStats() WriterStats {
	s := &db.writerStats
	return WriterStats{
		Groups: s.groups.Load(), Calls: s.calls.Load(),
		Busy: time.Duration(s.busy.Load()), Gather: time.Duration(s.gather.Load()),
		SlotWait: time.Duration(s.slotWait.Load()), CheckpointHold: time.Duration(s.checkpointHold.Load()),
	}
}

// since adds the time since start to the counter c.
func since(c *atomic.Int64, start time.Time) { c.Add(int64(time.Since(start))) }

// group counts a group of n calls; commitGroup counts its time (busy once
// it holds the write slot, slotWait before).
func (s *writerStats) group(n int) {
	s.groups.Add(1)
	s.calls.Add(uint64(n))
}
