package storage

import (
	"context"
	"fmt"
)

// RulesVersionTable is the counter of run-time policy rules (migration
// 0004): every change to policy_rules bumps it in its own transaction.
const RulesVersionTable = "rules_version"

// NewChangeVersion returns a version source over another one-row counter
// table (a constant such as RulesVersionTable, never user input), with the
// same freshness check as the grants': a change committed by any process
// or replica is seen by the very next Current, and on SQLite nothing is
// queried while nothing commits.
func NewChangeVersion(db *DB, table string) *GrantsVersion {
	return db.newVersion(table)
}

// BumpVersion increments the counter table inside tx. Call it first in a
// transaction that changes the guarded table: on PostgreSQL the row lock
// also serializes such transactions across replicas.
func BumpVersion(ctx context.Context, q Querier, table string) error {
	if _, err := q.ExecContext(ctx, `UPDATE `+table+` SET n = n + 1 WHERE id = 1`); err != nil {
		return fmt.Errorf("bump %s: %w", table, err)
	}
	return nil
}
