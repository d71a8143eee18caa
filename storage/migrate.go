// The schema: the embedded migrations of each engine, applied in order
// under a lock, and the version they leave.

package storage

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

// ErrTooNew is returned when the database was migrated by a newer binary.
var ErrTooNew = errors.New("database schema is newer than this binary")

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the numbered migrations of one engine, oldest first.
// Each engine has its own directory with the same numbers: the schemas
// mirror each other, in each engine's own DDL.
func migrations(d Dialect) ([]migration, error) {
	dir := "migrations/" + string(d)
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration file %s: name must start with a number and _", e.Name())
		}
		b, err := migrationFiles.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{v, e.Name(), string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, contiguous(d, out)
}

// contiguous refuses a list of migrations whose numbers are not 1, 2, 3…:
// a second file with a number already taken (two changes landed side by
// side) would otherwise be skipped silently, its tables missing.
func contiguous(d Dialect, ms []migration) error {
	for i, m := range ms {
		switch {
		case i > 0 && m.version == ms[i-1].version:
			return fmt.Errorf("%s migrations %s and %s share the number %d: renumber the newer one", d, ms[i-1].name, m.name, m.version)
		case m.version != i+1:
			return fmt.Errorf("%s migration %s: number %d, want %d (the numbers run 1, 2, 3… without gaps)", d, m.name, m.version, i+1)
		}
	}
	return nil
}

// SchemaVersion is the newest migration this binary knows.
func SchemaVersion() int {
	ms, _ := migrations(SQLite)
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// Version returns the schema version the database is at.
func (db *DB) Version(ctx context.Context) (int, error) {
	var current int
	err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current)
	return current, err
}

// migrationLock serializes migrations: on SQLite the immediate transaction
// is the lock already; on PostgreSQL several replicas may start at once,
// so each migration transaction first takes a transaction-level advisory
// lock (released at commit).
func (db *DB) migrationLock(ctx context.Context, tx *sql.Tx) error {
	if db.pg == nil {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, db.pg.migrateKey)
	return err
}

func (db *DB) migrate(ctx context.Context) error {
	err := func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := db.migrationLock(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		return err
	}
	ms, err := migrations(db.Dialect)
	if err != nil {
		return err
	}
	current, err := db.Version(ctx)
	if err != nil {
		return err
	}
	if len(ms) > 0 && current > ms[len(ms)-1].version {
		return fmt.Errorf("%w: database at version %d, binary knows up to %d; upgrade the gateway",
			ErrTooNew, current, ms[len(ms)-1].version)
	}
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if err := db.apply(ctx, m); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
	}
	if err := db.ensureGenesis(ctx); err != nil {
		return fmt.Errorf("audit chain genesis: %w", err)
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := db.migrationLock(ctx, tx); err != nil {
		return err
	}
	// A concurrent opener may have applied it while we waited for the lock.
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version WHERE version = $1`, m.version).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)`,
		m.version, m.name, FormatTime(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}
