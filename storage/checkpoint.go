package storage

import (
	"context"
	"time"
)

// checkpointEvery is how often the checkpointer copies the WAL's committed
// pages back into the database file.
var checkpointEvery = 200 * time.Millisecond

// restartFrames is the WAL length, in frames (pages), past which the
// checkpointer starts the WAL again even if it has to wait for readers.
var restartFrames = 16384 // 64 MiB of 4 KiB pages

// SQLite's own checkpoint (wal_autocheckpoint) runs inside the COMMIT that
// takes the WAL past 1000 pages: that writer copies the pages and waits for
// two fsyncs while every write queued behind it waits too. The connections
// are opened with it off, and a goroutine of each open database runs a
// PASSIVE checkpoint (one that never waits for a reader or writer) every
// checkpointEvery instead, beside the writes. SQLite starts the WAL again
// from the top at the first write after a checkpoint that copied
// everything, but only when no reader is still using it: under a steady
// stream of short reads there always is one, and the WAL grew without end
// (6.8 GB in a benchmark of three minutes, its old pages read back from
// disk). So when a checkpoint leaves the WAL longer than restartFrames,
// the next is a RESTART: it waits (within busy_timeout) for the readers of
// the moment to finish and makes the next write start the WAL again, which
// journal_size_limit then cuts back to its limit. When the last connection
// to the file closes (of this process or the last one using it), SQLite
// checkpoints and removes the WAL itself.
func (db *DB) runCheckpoints() {
	defer close(db.checkpointDone)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	mode := "PASSIVE"
	for {
		select {
		case <-db.checkpointStop:
			return
		case <-t.C:
		}
		// Errors (SQLITE_BUSY while another process checkpoints, a closed
		// pool) leave the pages for the next round.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var busy, log, done int
		err := db.DB.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done)
		cancel()
		mode = "PASSIVE"
		if err == nil && log > restartFrames {
			mode = "RESTART"
		}
	}
}

// stopCheckpoints ends runCheckpoints and waits for it.
func (db *DB) stopCheckpoints() {
	if db.checkpointStop == nil {
		return
	}
	db.checkpointOnce.Do(func() { close(db.checkpointStop) })
	<-db.checkpointDone
}
