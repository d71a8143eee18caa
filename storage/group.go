package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync/atomic"
)

// maxGroup bounds how many write functions share one transaction.
const maxGroup = 256

// groupCommit queues the write functions given to GroupTx. The queue is a
// lock-free stack: with a mutex, the writer parked on it whenever a caller
// held it, and then waited behind the callers in the scheduler's queue
// while every queued call waited for it.
type groupCommit struct {
	head    atomic.Pointer[groupOp] // the calls queued, newest first
	running atomic.Bool             // a goroutine is running batches
}

type groupOp struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	next *groupOp // the call queued before this one
	err  error
	done chan struct{}
}

// GroupTx runs fn in a write transaction, as InTx does, but shares that
// transaction with the other GroupTx calls that arrive while the one before
// is committing (group commit): one BEGIN and one COMMIT, and one write of
// each changed page, for the whole group. Each fn runs inside its own
// savepoint, so a fn that fails is rolled back alone and the others go on;
// GroupTx returns only after the transaction holding fn's work committed
// (nil) or did not (an error, and none of fn's work is kept). fn runs once,
// on another goroutine than the caller's, and must not call InTx or GroupTx.
// A call whose ctx ends before its turn comes is not run.
func (db *DB) GroupTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &groupOp{ctx: ctx, fn: fn, done: make(chan struct{})}
	g := &db.group
	for {
		op.next = g.head.Load()
		if g.head.CompareAndSwap(op.next, op) {
			break
		}
	}
	if g.running.CompareAndSwap(false, true) {
		// The caller that found no writer commits what is queued itself
		// (no goroutine to wake when the gateway is quiet); what queues
		// meanwhile goes to a writer of its own, so this caller is
		// answered at once.
		db.runBatches()
		if g.resume() {
			go db.writeLoop()
		}
	}
	<-op.done
	return op.err
}

// resume is called by the writer that found the queue empty: it stops,
// unless a call queued just as it stopped (then it goes on: true).
func (g *groupCommit) resume() bool {
	g.running.Store(false)
	return g.head.Load() != nil && g.running.CompareAndSwap(false, true)
}

// runBatches commits what is queued, oldest first, maxGroup calls per
// transaction, and answers each call.
func (db *DB) runBatches() {
	var batch []*groupOp
	for op := db.group.head.Swap(nil); op != nil; op = op.next {
		batch = append(batch, op)
	}
	slices.Reverse(batch)
	for len(batch) > 0 {
		n := min(len(batch), maxGroup)
		errs := db.commitGroup(batch[:n])
		for i, op := range batch[:n] {
			op.err = errs[i]
			close(op.done)
		}
		batch = batch[n:]
	}
}

// writeLoop commits batches until none is queued. One goroutine runs them
// back to back: handing each batch to a new goroutine put the writer
// behind the callers it had just woken, in the scheduler's queue.
func (db *DB) writeLoop() {
	g := &db.group
	for {
		db.runBatches()
		if g.head.Load() == nil && !g.resume() {
			return
		}
	}
}

// commitGroup runs batch in one transaction and says how each call in it
// ended: nil when its work committed.
func (db *DB) commitGroup(batch []*groupOp) []error {
	errs := make([]error, len(batch))
	fail := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	live := 0
	for i, op := range batch {
		if errs[i] = op.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	if live == 0 {
		return errs
	}
	// The group's own context: it must not end with any one caller's.
	ctx, cancel := context.WithTimeout(context.Background(), writeWait)
	defer cancel()
	unlock, err := db.lockWrite(context.Background()) // not ctx: its deadline is writeWait too
	if err != nil {
		return fail(err)
	}
	defer unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	cursor, endCursor := db.openCursor(tx)
	defer endCursor()
	if live == 1 {
		// No savepoint needed: the transaction is fn's alone, and a
		// failing fn rolls all of it back, as in InTx.
		for i, op := range batch {
			if errs[i] == nil {
				if errs[i] = op.fn(tx); errs[i] != nil {
					return errs
				}
			}
		}
	} else {
		q := db.Tx(tx) // the savepoint statements, prepared once
		for i, op := range batch {
			if errs[i] != nil {
				continue
			}
			if _, err := q.ExecContext(ctx, `SAVEPOINT group_op`); err != nil {
				return fail(fmt.Errorf("group commit: %w", err))
			}
			var saved chainCursor
			if cursor != nil {
				saved = *cursor
			}
			errs[i] = op.fn(tx)
			if errs[i] != nil {
				if _, err := q.ExecContext(ctx, `ROLLBACK TO SAVEPOINT group_op`); err != nil {
					return fail(fmt.Errorf("group commit: %w", err))
				}
				if cursor != nil {
					*cursor = saved // the chain rows fn appended are gone with it
				}
			}
			if _, err := q.ExecContext(ctx, `RELEASE SAVEPOINT group_op`); err != nil {
				return fail(fmt.Errorf("group commit: %w", err))
			}
		}
	}
	// The group's audit rows join the hash chain as it commits (as in InTx).
	if err := db.sealAudit(ctx, tx); err != nil {
		return fail(fmt.Errorf("group commit: %w", err))
	}
	if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}
