package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// RulesVersionTable is the counter of run-time policy rules (migration
// 0004): every change to policy_rules bumps it in its own transaction.
const RulesVersionTable = "rules_version"

// ChangeVersion tells whether a table guarded by a one-row counter changed,
// in any process or replica, cheaply enough to ask before every decision.
// It is the one freshness check of run-time rules: on SQLite, data_version
// moves only when another connection commits, and only then is the counter
// read again; on PostgreSQL the counter (one row by primary key) is read
// each time, so a change committed by another replica is seen at once.
type ChangeVersion struct {
	db    *DB
	query string

	mu      sync.Mutex
	conn    *sql.Conn // data_version is per connection: always ask the same one
	dataVer int64
	n       int64
	known   bool
}

// NewChangeVersion returns a version source over the counter table (a
// constant such as RulesVersionTable, never user input).
func NewChangeVersion(db *DB, table string) *ChangeVersion {
	return &ChangeVersion{db: db, query: `SELECT n FROM ` + table + ` WHERE id = 1`}
}

// Current returns a number that changes whenever the guarded table changes.
func (v *ChangeVersion) Current(ctx context.Context) (int64, error) {
	if v.db.pg != nil {
		var n int64
		if err := v.db.QueryRowContext(ctx, v.query).Scan(&n); err != nil {
			return 0, fmt.Errorf("change version: %w", err)
		}
		return n, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		c, err := v.db.DB.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("change version: %w", err)
		}
		v.conn = c
	}
	var dv int64
	if err := v.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
		v.reset()
		return 0, fmt.Errorf("change version: %w", err)
	}
	if v.known && dv == v.dataVer {
		return v.n, nil
	}
	var n int64
	if err := v.conn.QueryRowContext(ctx, v.query).Scan(&n); err != nil {
		v.reset()
		return 0, fmt.Errorf("change version: %w", err)
	}
	v.dataVer, v.n, v.known = dv, n, true
	return n, nil
}

func (v *ChangeVersion) reset() {
	if v.conn != nil {
		v.conn.Close()
		v.conn = nil
	}
	v.known = false
}

// Close releases the dedicated connection.
func (v *ChangeVersion) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reset()
	return nil
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
