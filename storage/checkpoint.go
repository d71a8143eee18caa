package storage

import (
	"context"
	"time"
)

// checkpointEvery is how often the checkpointer copies the WAL's committed
// pages back into the database file.
var checkpointEvery = 200 * time.Millisecond

// SQLite's own checkpoint (wal_autocheckpoint) runs inside the COMMIT that
// takes the WAL past 1000 pages: that writer copies the pages and waits for
// two fsyncs while every write queued behind it waits too. The connections
// are opened with it off, and a goroutine of each open database runs a
// PASSIVE checkpoint (one that never waits for a reader or writer) every
// checkpointEvery instead, beside the writes. The WAL stays as bounded as
// before: SQLite starts it again from the top at the first write after a
// checkpoint that copied everything. When the last connection to the file
// closes (of this process or the last one using it), SQLite checkpoints and
// removes the WAL itself.
func (db *DB) runCheckpoints() {
	defer close(db.checkpointDone)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-db.checkpointStop:
			return
		case <-t.C:
		}
		// Errors (SQLITE_BUSY while another process checkpoints, a closed
		// pool) leave the pages for the next round.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = db.DB.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`)
		cancel()
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
