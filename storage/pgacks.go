// The writers' half of the replicas' leases (see pglease.go): a change
// to grants or rules returns only once every replica that may decide on
// counters it already knows has installed it.

package storage

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrUnconfirmed fails a call whose change to grants or rules committed
// but whose context ended before every replica was known to see it: the
// change stands, and a replica may still decide without it for at most
// the lease's term (2 s) after the commit.
var ErrUnconfirmed = errors.New("storage: the change is committed, but not yet confirmed seen by every replica (it will be within 2 s)")

// pgBumped says whether the transaction asking bumped a change counter
// (the counters' trigger sets gateway.counters_bumped for the
// transaction, and a savepoint rolled back takes it back with the bump),
// and reads both counters: the transaction's own values when it bumped
// them, since it holds their rows until it commits.
const pgBumped = `SELECT COALESCE(current_setting('gateway.counters_bumped', true) = 'on', false),
  (SELECT n FROM grants_version WHERE id = 1), (SELECT n FROM ` + RulesVersionTable + ` WHERE id = 1)`

// unacked counts the replicas other than $3 whose lease runs, by the
// database's clock, and that have not acknowledged counters at least $1,
// $2.
const unacked = `SELECT count(*) FROM replica_leases
WHERE expires_at > now() AND (grants_acked < $1 OR rules_acked < $2) AND id <> $3`

// ackPollMax bounds the pause between two reads of the acknowledgements.
const ackPollMax = 5 * time.Millisecond

// bumped reads, before the commit of q's transaction, whether it changed
// grants or rules, and the counters it leaves (see pgBumped).
func (db *DB) bumped(ctx context.Context, q Querier) (vals [2]int64, ok bool, err error) {
	if db.pg == nil {
		return vals, false, nil
	}
	if err := q.QueryRowContext(ctx, pgBumped).Scan(&ok, &vals[0], &vals[1]); err != nil {
		return vals, false, fmt.Errorf("read the change counters: %w", err)
	}
	return vals, ok, nil
}

// awaitAcks returns once every replica whose lease runs has acknowledged
// counters at least vals (a change to them committed and returned just
// before, at committed), or once leaseTerm has passed since then: no
// lease that predates the commit vouches for older counters after that,
// whatever the database or the other replicas do (the argument is in
// docs/replicas.md). So a database that cannot be asked costs the wait,
// never the promise. Only ctx ending first fails it: ErrUnconfirmed.
func (db *DB) awaitAcks(ctx context.Context, vals [2]int64, committed time.Time) error {
	// This replica's own lease takes the change now; its row is then not
	// waited for. (The CLI holds no lease: its origin names no row.)
	db.pg.lease.install(vals)
	deadline := committed.Add(leaseTerm)
	pause := 500 * time.Microsecond
	for {
		qctx, cancel := context.WithDeadline(ctx, deadline)
		var n int64
		err := db.QueryRowContext(qctx, unacked, vals[0], vals[1], db.pg.origin).Scan(&n)
		cancel()
		if err == nil && n == 0 {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil // every lease older than the commit ran out
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ErrUnconfirmed, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, ackPollMax)
	}
}
