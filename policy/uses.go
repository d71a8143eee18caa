package policy

import (
	"context"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

// addUses is the statement of this file: a grant's count of the
// decisions it allowed grows by $1.
const addUses = `UPDATE grants SET uses = uses + $1 WHERE id = $2`

// UseCounter counts the decisions each grant allowed without a write on
// the decision's path: a decision adds one in memory, and Flush writes the
// sums, every grant in one transaction, a few seconds later. A process
// that dies between two flushes loses those seconds' counts, never a
// decision; the counts are a ledger for people, not an input of policy.
type UseCounter struct {
	db      *storage.DB
	mu      sync.Mutex
	pending map[int64]int64
}

// NewUseCounter returns a counter writing to db.
func NewUseCounter(db *storage.DB) *UseCounter {
	return &UseCounter{db: db, pending: map[int64]int64{}}
}

// Add counts one use of grant id.
func (c *UseCounter) Add(id int64) {
	c.mu.Lock()
	c.pending[id]++
	c.mu.Unlock()
}

// Flush writes the counts gathered since the last flush. On a failure
// they are kept for the next one.
func (c *UseCounter) Flush(ctx context.Context) error {
	c.mu.Lock()
	batch := c.pending
	c.pending = map[int64]int64{}
	c.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := c.db.InTx(ctx, func(q storage.Querier) error {
		for id, n := range batch {
			if _, err := q.ExecContext(ctx, addUses, n, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.mu.Lock()
		for id, n := range batch {
			c.pending[id] += n
		}
		c.mu.Unlock()
	}
	return err
}

// Run flushes every interval until ctx ends, then once more.
func (c *UseCounter) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = c.Flush(fctx)
			cancel()
			return
		case <-t.C:
			_ = c.Flush(ctx)
		}
	}
}
