package approvals

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The statements of this file. A request a grant allowed on arrival has
// outcome "allowed" and its grant_id; one a person allowed later (Allow
// always writes a grant too) has outcome "approval_required".
const (
	sumGrantUses = `SELECT r.grant_id, COUNT(*) FROM audit a JOIN requests r ON r.id = a.request_id
	WHERE a.seq > $1 AND a.seq <= $2 AND a.event = $3 AND r.outcome = $4 AND r.grant_id IS NOT NULL
	GROUP BY r.grant_id`
	addGrantUses = `UPDATE grants SET uses = uses + $1 WHERE id = $2`
)

// GrantUsesCursor is the cursor (storage.Cursor) of the grant use counts:
// the audit chain's rows up to it are counted.
const GrantUsesCursor = "grant_uses"

// grantUsesBatch bounds the audit rows one count reads.
const grantUsesBatch = 20000

// CountGrantUses adds to each grant's uses (the ledger's "used N times")
// the requests it allowed whose outcome rows the audit chain holds after
// the cursor, and moves the cursor past them in the same transaction:
// every decision a grant made is counted exactly once, whatever crashes
// or replicas come between, and the decision's own path writes nothing
// for it. It returns how many it added.
func (s *Service) CountGrantUses(ctx context.Context) (int64, error) {
	var added int64
	for {
		n, more, err := s.countGrantUses(ctx)
		added += n
		if err != nil || !more {
			return added, err
		}
	}
}

func (s *Service) countGrantUses(ctx context.Context) (added int64, more bool, err error) {
	from, _, err := storage.Cursor(ctx, s.db, GrantUsesCursor)
	if err != nil {
		return 0, false, err
	}
	head, err := s.db.AuditHead(ctx)
	if err != nil || head <= from {
		return 0, false, err
	}
	to := min(head, from+grantUsesBatch)
	rows, err := s.db.QueryContext(ctx, sumGrantUses, from, to, storage.AuditOutcome, string(policy.Allowed))
	if err != nil {
		return 0, false, fmt.Errorf("count grant uses: %w", err)
	}
	sums := map[int64]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return 0, false, fmt.Errorf("count grant uses: %w", err)
		}
		sums[id] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, false, fmt.Errorf("count grant uses: %w", err)
	}
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		added = 0
		for id, n := range sums {
			if _, err := tx.ExecContext(ctx, addGrantUses, n, id); err != nil {
				return err
			}
			added += n
		}
		return storage.MoveCursor(ctx, tx, GrantUsesCursor, from, to)
	})
	if errors.Is(err, storage.ErrCursorMoved) {
		return 0, false, nil // another replica counted them
	}
	if err != nil {
		return 0, false, fmt.Errorf("count grant uses: %w", err)
	}
	return added, to < head, nil
}

// RunGrantUses counts the grants' uses every interval until ctx ends (the
// leader's).
func (s *Service) RunGrantUses(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := s.CountGrantUses(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("grant uses not counted; will retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
