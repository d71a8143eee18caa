package storage

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// GrantsVersion tells whether the grants table changed, in any process,
// cheaply enough to ask before every decision. SQLite's data_version moves
// when any other connection commits anything; only then is the grants
// counter (kept by triggers, see migration 0003) read again.
type GrantsVersion struct {
	db *DB

	mu      sync.Mutex
	conn    *sql.Conn // data_version is per connection: always ask the same one
	dataVer int64
	grants  int64
	known   bool
}

// NewGrantsVersion returns a version source over db.
func NewGrantsVersion(db *DB) *GrantsVersion { return &GrantsVersion{db: db} }

// Current returns a number that changes whenever grants change.
func (v *GrantsVersion) Current(ctx context.Context) (int64, error) {
	if v.db.pg != nil {
		// PostgreSQL has no data_version: read the counter, one indexed
		// row, through the pool (no lock: sessions need no memory here).
		// A grant changed by another replica is then seen at once too.
		var n int64
		if err := v.db.QueryRowContext(ctx, `SELECT n FROM grants_version WHERE id = 1`).Scan(&n); err != nil {
			return 0, fmt.Errorf("grants version: %w", err)
		}
		return n, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		c, err := v.db.DB.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("grants version: %w", err)
		}
		v.conn = c
	}
	var dv int64
	if err := v.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
		v.reset()
		return 0, fmt.Errorf("grants version: %w", err)
	}
	if v.known && dv == v.dataVer {
		return v.grants, nil
	}
	var n int64
	if err := v.conn.QueryRowContext(ctx, `SELECT n FROM grants_version WHERE id = 1`).Scan(&n); err != nil {
		v.reset()
		return 0, fmt.Errorf("grants version: %w", err)
	}
	v.dataVer, v.grants, v.known = dv, n, true
	return n, nil
}

// reset drops the connection after an error; the next call opens another.
func (v *GrantsVersion) reset() {
	if v.conn != nil {
		v.conn.Close()
		v.conn = nil
	}
	v.known = false
}

// Close releases the dedicated connection.
func (v *GrantsVersion) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reset()
	return nil
}
