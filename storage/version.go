package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// GrantsVersion tells whether the grants table changed, in any process,
// cheaply enough to ask before every decision. NewChangeVersion gives the
// same check over another counter (the run-time rules').
//
// On SQLite the fast path reads the WAL-index header from a shared mapping
// of the -shm file (see walIndex): every commit by any process changes it
// before the commit returns, so an unchanged header proves that the
// counter read last time (kept by triggers, migration 0003) is still
// current, without a query or a lock. Only after a commit (by anyone, to
// any table) is the counter read again. Without the mapping it falls back
// to PRAGMA data_version on a dedicated connection.
type GrantsVersion struct {
	db    *DB
	query string // reads the counter: grants_version, or another (NewChangeVersion)
	pgIdx int    // its place in pgCounters, -1 if none

	snap atomic.Pointer[versionSnap] // fast path: the header that proved grants
	wal  atomic.Pointer[walIndex]    // the -shm mapping; nil: not mapped (yet, or not possible)

	mu      sync.Mutex
	conn    *sql.Conn // data_version is per connection: always ask the same one
	stmt    *sql.Stmt // query, prepared on conn
	mapTry  bool      // the mapping was tried with conn open
	dataVer int64
	grants  int64
	known   bool
}

// versionSnap pairs a WAL-index header with the grants counter read after it.
type versionSnap struct {
	hdr    walHeader
	grants int64
}

// NewGrantsVersion returns a version source over db. It holds a
// connection of its own once used: Close it, or close db (which closes it).
func NewGrantsVersion(db *DB) *GrantsVersion {
	return db.newVersion("grants_version")
}

// newVersion makes a version source over the one-row counter table, and
// registers it for DB.Close.
func (db *DB) newVersion(table string) *GrantsVersion {
	v := &GrantsVersion{db: db, query: `SELECT n FROM ` + table + ` WHERE id = 1`, pgIdx: slices.Index(pgCounters, table)}
	db.versionsMu.Lock()
	db.versions = append(db.versions, v)
	db.versionsMu.Unlock()
	return v
}

// Current returns a number that changes whenever grants change, as of a
// moment after the caller arrived (or, with Arrived, after the decision
// started): any change whose commit returned before then is counted.
func (v *GrantsVersion) Current(ctx context.Context) (int64, error) {
	if v.db.pg != nil && v.pgIdx >= 0 {
		// PostgreSQL has no data_version: the counters are read behind a
		// read barrier, for all decisions at once (see pgVersions).
		at, b := arrival(ctx)
		return v.db.pg.versions.counter(ctx, v.pgIdx, at, b)
	}
	if v.db.pg != nil {
		// Another counter: read it through the pool. A change by another
		// replica is then seen at once too.
		var n int64
		if err := v.db.QueryRowContext(ctx, v.query).Scan(&n); err != nil {
			return 0, fmt.Errorf("grants version: %w", err)
		}
		return n, nil
	}
	if s := v.snap.Load(); s != nil {
		if h, ok := v.walHeader(); ok {
			if h == s.hdr {
				return s.grants, nil
			}
			if v.db.vouched(s.hdr, h) {
				// Only the group writer's commits since: the counter stands.
				v.snap.CompareAndSwap(s, &versionSnap{hdr: h, grants: s.grants})
				return s.grants, nil
			}
		}
	}
	return v.slow(ctx)
}

// walHeader reads the mapped header, if any, without a lock: a mapping is
// unmapped only by Close, after which Current is not called.
func (v *GrantsVersion) walHeader() (walHeader, bool) {
	w := v.wal.Load()
	if w == nil {
		return walHeader{}, false
	}
	return w.header()
}

// slow asks SQLite, and records the header seen before the question so the
// next calls can skip it while nothing commits.
func (v *GrantsVersion) slow(ctx context.Context) (int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	// Decisions that queued here behind the one that just read the
	// counter need not read it again.
	if s := v.snap.Load(); s != nil {
		if h, ok := v.walHeader(); ok && h == s.hdr {
			return s.grants, nil
		}
	}
	if v.conn == nil {
		c, err := v.db.DB.Conn(ctx)
		if err != nil {
			return 0, fmt.Errorf("grants version: %w", err)
		}
		st, err := c.PrepareContext(ctx, v.query)
		if err != nil {
			c.Close()
			return 0, fmt.Errorf("grants version: %w", err)
		}
		v.conn, v.stmt = c, st
	}
	if !v.mapTry && v.db.Path != "" {
		// Map only while conn is open: it keeps the -shm file in place.
		v.mapTry = true
		if w := openWALIndex(v.db.Path); w != nil {
			v.wal.Store(w)
		}
	}
	if hdr, ok := v.walHeader(); ok {
		// The header moved since the last snapshot (some commit): read the
		// counter. The header is read first, so a commit in between makes
		// the snapshot stale (read again next time), never wrong.
		var n int64
		if err := v.stmt.QueryRowContext(ctx).Scan(&n); err != nil {
			v.reset()
			return 0, fmt.Errorf("grants version: %w", err)
		}
		v.grants, v.known = n, false
		v.snap.Store(&versionSnap{hdr: hdr, grants: n})
		return n, nil
	}
	// No mapping: data_version moves when another connection commits.
	v.snap.Store(nil)
	var dv int64
	if err := v.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dv); err != nil {
		v.reset()
		return 0, fmt.Errorf("grants version: %w", err)
	}
	if !(v.known && dv == v.dataVer) {
		var n int64
		if err := v.stmt.QueryRowContext(ctx).Scan(&n); err != nil {
			v.reset()
			return 0, fmt.Errorf("grants version: %w", err)
		}
		v.dataVer, v.grants, v.known = dv, n, true
	}
	return v.grants, nil
}

// reset drops the connection after an error; the next call opens another.
// The mapping is trusted only while that connection is open, so it is
// dropped too and made again with the next connection. It is not unmapped:
// a concurrent Current may still be reading it (4 KiB, after an error).
func (v *GrantsVersion) reset() {
	v.snap.Store(nil)
	v.wal.Store(nil)
	v.mapTry = false
	if v.stmt != nil {
		v.stmt.Close()
		v.stmt = nil
	}
	if v.conn != nil {
		v.conn.Close()
		v.conn = nil
	}
	v.known = false
}

// Close releases the dedicated connection and the mapping.
func (v *GrantsVersion) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	w := v.wal.Load()
	v.reset()
	w.close()
	return nil
}
