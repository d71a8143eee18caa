package storage

import (
	"context"
	"sync"
	"time"
)

// Option tunes Open.
type Option func(*checkpointer)

// CheckpointEvery sets how often the checkpointer copies the WAL's
// committed pages back into the database file (default 200 ms).
func CheckpointEvery(d time.Duration) Option { return func(c *checkpointer) { c.every = d } }

// RestartFrames sets the WAL length, in frames (pages), past which the
// checkpointer starts the WAL again even if it has to wait for readers
// (default 16384: 64 MiB of 4 KiB pages).
func RestartFrames(n int) Option { return func(c *checkpointer) { c.restartFrames = n } }

// checkpointer is the WAL checkpointer's settings and state (SQLite).
type checkpointer struct {
	every         time.Duration
	restartFrames int

	stop chan struct{} // ends runCheckpoints
	done chan struct{}
	once sync.Once
}

func newCheckpointer(opts []Option) *checkpointer {
	c := &checkpointer{every: 200 * time.Millisecond, restartFrames: 16384,
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	return c
}

// SQLite's own checkpoint (wal_autocheckpoint) runs inside the COMMIT that
// takes the WAL past 1000 pages: that writer copies the pages and waits for
// two fsyncs while every write queued behind it waits too. The connections
// are opened with it off, and a goroutine of each open database checkpoints
// every CheckpointEvery instead, beside the writes, in two passes:
//
//   - a PASSIVE checkpoint (one that never waits for a reader or writer)
//     copies what was committed since the last round, while this process
//     goes on writing;
//   - then, holding this process's write slot (lockWrite), a second one
//     copies the little committed during the first.
//
// The WAL is then copied to its end while no writer of this process can
// add to it, and SQLite starts it again from the top at the next write
// (when no reader is still using it): the WAL stays a few MiB long and its
// pages stay in the page cache. Without the second pass, a stream of group
// commits always left the last few frames uncopied, so SQLite never started
// the WAL again; it grew to RestartFrames and only a RESTART checkpoint,
// which holds SQLite's write lock while it copies and waits for readers
// (about 35 ms here, with the writers asleep in their busy handler), cut it
// back. The second pass holds the writes of this process for a few
// milliseconds (it copies the pages of a few dozen commits and syncs).
//
// Writers of another process (the CLI, a second gateway) or long readers
// can still keep the WAL from starting again; when a checkpoint leaves it
// longer than RestartFrames, the next second pass is a RESTART, which
// waits (within busy_timeout) for the readers of the moment to finish.
// journal_size_limit then cuts the file back. When the last connection to
// the file closes (of this process or the last one using it), SQLite
// checkpoints and removes the WAL itself.
func (db *DB) runCheckpoints() {
	defer close(db.checkpoints.done)
	t := time.NewTicker(db.checkpoints.every)
	defer t.Stop()
	stopped, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-db.checkpoints.stop
		stop()
	}()
	for {
		select {
		case <-stopped.Done():
			return
		case <-t.C:
		}
		// Errors (SQLITE_BUSY while another process checkpoints, a closed
		// pool) leave the pages for the next round.
		frames, err := db.checkpoint(stopped, "PASSIVE")
		if err != nil || frames == 0 {
			continue
		}
		mode := "PASSIVE"
		if frames > db.checkpoints.restartFrames {
			mode = "RESTART"
		}
		unlock, err := db.lockWrite(stopped)
		if err != nil {
			continue
		}
		start := time.Now()
		db.checkpoint(stopped, mode)
		unlock()
		since(&db.writerStats.checkpointHold, start)
	}
}

// checkpoint runs one checkpoint and returns the WAL's length in frames.
func (db *DB) checkpoint(ctx context.Context, mode string) (frames int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var busy, copied int
	err = db.DB.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &copied)
	return frames, err
}

// stopCheckpoints ends runCheckpoints and waits for it.
func (db *DB) stopCheckpoints() {
	if db.checkpoints == nil {
		return
	}
	db.checkpoints.once.Do(func() { close(db.checkpoints.stop) })
	<-db.checkpoints.done
}
