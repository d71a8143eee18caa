package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// maxGroup bounds how many write functions share one transaction.
const maxGroup = 256

// groupCommit queues the write functions given to GroupTx.
type groupCommit struct {
	mu      sync.Mutex
	queue   []*groupOp
	running bool // a goroutine is running batches
}

type groupOp struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan error
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
	op := &groupOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g := &db.group
	g.mu.Lock()
	g.queue = append(g.queue, op)
	lead := !g.running
	g.running = true
	g.mu.Unlock()
	if lead {
		db.runGroup()
	}
	return <-op.done
}

// runGroup commits one group, then hands on to a new goroutine if more
// calls queued meanwhile, so the caller that led is answered at once.
func (db *DB) runGroup() {
	g := &db.group
	g.mu.Lock()
	n := min(len(g.queue), maxGroup)
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	if len(g.queue) == 0 {
		g.queue = nil
	}
	g.mu.Unlock()

	db.commitGroup(batch)

	g.mu.Lock()
	if len(g.queue) > 0 {
		go db.runGroup()
	} else {
		g.running = false
	}
	g.mu.Unlock()
}

// commitGroup runs batch in one transaction and answers every call in it.
func (db *DB) commitGroup(batch []*groupOp) {
	errs := make([]error, len(batch))
	fail := func(err error) {
		for _, op := range batch {
			op.done <- err
		}
	}
	live := 0
	for i, op := range batch {
		if errs[i] = op.ctx.Err(); errs[i] == nil {
			live++
		}
	}
	if live == 0 {
		for i, op := range batch {
			op.done <- errs[i]
		}
		return
	}
	// The group's own context: it must not end with any one caller's.
	ctx, cancel := context.WithTimeout(context.Background(), writeWait)
	defer cancel()
	unlock, err := db.lockWrite(context.Background()) // not ctx: its deadline is writeWait too
	if err != nil {
		fail(err)
		return
	}
	defer unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		fail(err)
		return
	}
	defer tx.Rollback()
	if live == 1 {
		// No savepoint needed: the transaction is fn's alone, and a
		// failing fn rolls all of it back, as in InTx.
		for i, op := range batch {
			if errs[i] == nil {
				if err := op.fn(tx); err != nil {
					errs[i] = err
					for i, op := range batch {
						op.done <- errs[i]
					}
					return
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
				fail(fmt.Errorf("group commit: %w", err))
				return
			}
			errs[i] = op.fn(tx)
			if errs[i] != nil {
				if _, err := q.ExecContext(ctx, `ROLLBACK TO SAVEPOINT group_op`); err != nil {
					fail(fmt.Errorf("group commit: %w", err))
					return
				}
			}
			if _, err := q.ExecContext(ctx, `RELEASE SAVEPOINT group_op`); err != nil {
				fail(fmt.Errorf("group commit: %w", err))
				return
			}
		}
	}
	// The group's audit rows join the hash chain as it commits (as in InTx).
	if err := db.sealAudit(ctx, tx); err != nil {
		fail(fmt.Errorf("group commit: %w", err))
		return
	}
	cerr := tx.Commit()
	for i, op := range batch {
		if errs[i] != nil {
			op.done <- errs[i]
		} else {
			op.done <- cerr
		}
	}
}
