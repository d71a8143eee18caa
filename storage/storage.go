// Package storage opens the gateway's database and runs its migrations. It
// owns the schema and the audit trail; the stores that use the tables
// (policy's grants, approvals' requests) own their own SQL.
//
// Two engines: SQLite, the embedded default (one process), and PostgreSQL
// for several replicas of the gateway on one database. The SQL is shared
// ($N placeholders, times as fixed-width UTC text); the few statements the
// engines disagree on are chosen by DB.Dialect. On PostgreSQL the package
// also carries what replicas need from each other: change notices
// (Notify, Listen) and the leader lock (Lead).
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // pure Go, no cgo
)

// Dialect names the SQL engine of a DB.
type Dialect string

// The engines.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// TimeFormat is how every time is stored: UTC ISO 8601 with a fixed width,
// so that comparing the strings compares the times.
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in TimeFormat (UTC).
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// ParseTime reads a time written by FormatTime.
func ParseTime(s string) (time.Time, error) { return time.Parse(TimeFormat, s) }

// Querier is what both *sql.DB and *sql.Tx provide, so a store method can
// run inside a transaction that its caller owns.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// DB is an open gateway database. Its ExecContext, QueryContext and
// QueryRowContext run through a cache of prepared statements: SQLite
// otherwise parses and plans every statement on every call, which is most
// of the cost of a decision.
type DB struct {
	*sql.DB
	// Path is the SQLite file; empty on PostgreSQL (see Name).
	Path string
	// Dialect is the engine: SQLite or Postgres.
	Dialect Dialect

	// writeLock admits one write transaction of this process at a time.
	// SQLite admits one writer anyway; a writer that finds the database
	// locked sleeps in the busy handler (1, 2, 5, 10 … ms), so queueing in
	// Go instead keeps the latency of concurrent writes to the time the
	// writes take. Nil on PostgreSQL, which has row locks and many writers.
	writeLock chan struct{}

	pg *pgState // PostgreSQL only

	group       groupCommit // see GroupTx
	writerStats writerStats // see WriterStats

	checkpoints *checkpointer // SQLite; see runCheckpoints

	ownState // the group writer's own commits (owncommits.go)

	// cursor is the audit chain head of the SQLite write transaction in
	// progress (InTx, GroupTx), nil between them: see chainCursor.
	cursor atomic.Pointer[chainCursor]
	// groupHead is the chain's head as the group writer's last commit left
	// it; only the holder of the write slot touches it (see tryGroup).
	groupHead groupHead

	// Outage logs an outage of the database once when it starts and once
	// when it ends (see Outage).
	Outage Outage

	stmtMu  sync.RWMutex
	stmts   map[string]*sql.Stmt
	warming sync.Map // queries of transactions being (or once) prepared in the background
	// conns counts the open SQLite connections, so Close can wait for
	// them (see countedConnector); nil on PostgreSQL.
	conns *countedConnector

	versionsMu sync.Mutex
	versions   []*GrantsVersion // made by NewGrantsVersion, NewChangeVersion; closed by Close
}

// writeWait is how long a write transaction waits for the one before it,
// like busy_timeout for another process's.
const writeWait = 10 * time.Second

// busyTimeout is SQLite's busy_timeout: how long a statement waits for
// another process's lock on the file before it fails with SQLITE_BUSY,
// which the API answers 503 unavailable. It bounds what a call waits when
// another process holds the database (docs/replicas.md).
const busyTimeout = 5 * time.Second

// readyWait bounds Ready's own wait for the write lock: a health check
// answers in about a second even while another process holds the file.
const readyWait = time.Second

// ErrBusy is returned by InTx after waiting writeWait for another write.
var ErrBusy = errors.New("storage: database busy: another write held it for too long")

// cacheSize is each connection's page cache (SQLite's cache_size; negative
// means KiB): 1 MiB instead of SQLite's 2, so the pool's caches
// stay within maxConns MiB of memory outside the Go heap. The pages they
// no longer hold are in the system's file cache, a read away; the hot
// ones (the trees' upper levels, the pages being appended to) stay.
const cacheSize = -1024

// maxConns is the size of the connection pool. database/sql keeps only 2
// idle connections by default, so under concurrent load it opened and
// closed a SQLite connection (with its pragmas and schema read) on most
// calls; the pool is bounded and every connection is kept.
func maxConns() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

// Open opens (creating if needed) the SQLite file at path: parent directory
// 0700, file 0600, WAL, a busy timeout, foreign keys, statement journals
// in memory, checkpoints beside the writes (see runCheckpoints) and
// immediate transactions (deferred ones fail with SQLITE_BUSY under
// concurrent read-then-write, which busy_timeout does not cure), then
// migrates. opts tune the checkpointer.
func Open(ctx context.Context, path string, opts ...Option) (*DB, error) {
	if path == "" {
		return nil, errors.New("storage: empty database path")
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database directory: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	f.Close()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)&_pragma=journal_size_limit(67108864)&_pragma=wal_autocheckpoint(0)" +
		"&_pragma=cache_size(" + strconv.Itoa(cacheSize) + ")&_txlock=immediate"
	connector, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	conns := &countedConnector{Connector: connector}
	sqldb := sql.OpenDB(conns)
	n := maxConns()
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	db := &DB{DB: sqldb, Path: path, Dialect: SQLite, writeLock: make(chan struct{}, 1), stmts: map[string]*sql.Stmt{},
		checkpoints: newCheckpointer(opts), conns: conns}
	go db.runCheckpoints()
	if err := db.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate %s: %w", path, err)
	}
	return db, nil
}

// Config says which database to open: the [storage] table of the config.
type Config struct {
	Driver string // "sqlite" (the default) or "postgres"
	Path   string // the SQLite file
	DSN    string // the PostgreSQL URL or keyword/value string
}

// OpenConfig opens the database c names: Open for SQLite, OpenPostgres for
// PostgreSQL.
func OpenConfig(ctx context.Context, c Config) (*DB, error) {
	switch Dialect(c.Driver) {
	case SQLite, "":
		return Open(ctx, c.Path)
	case Postgres:
		return OpenPostgres(ctx, c.DSN)
	}
	return nil, fmt.Errorf("storage: unknown driver %q (sqlite or postgres)", c.Driver)
}

// Name says which database this is, for messages: the SQLite file, or the
// PostgreSQL server and database (never the password).
func (db *DB) Name() string {
	if db.pg != nil {
		return db.pg.name
	}
	return db.Path
}

// Ping checks the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// Ready checks the database can take a write now (for /readyz). On
// PostgreSQL that is Ping. On SQLite a read answers even while another
// process holds the write lock (WAL), so Ready takes this process's write
// slot and begins an immediate transaction, rolled back at once, on a
// connection that waits at most readyWait for the lock: a file another
// process keeps locked is not ready (SQLITE_BUSY, Unavailable), as a
// write would find it.
func (db *DB) Ready(ctx context.Context) error {
	if db.Dialect != SQLite {
		return db.Ping(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*readyWait)
	defer cancel()
	unlock, err := db.lockWrite(ctx)
	if err != nil {
		return fmt.Errorf("%w: this process's writes are held up (%v)", ErrBusy, err)
	}
	defer unlock()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(readyWait.Milliseconds(), 10)); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA busy_timeout = "+strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	return err
}

// InTx runs fn inside one transaction, committing when fn returns nil. On
// SQLite it is an immediate transaction and those of this process run one
// at a time (see DB.writeLock); fn must not call InTx itself. On
// PostgreSQL it is READ COMMITTED: state changes stay correct because they
// are conditional updates (UPDATE … WHERE status = 'pending'), which wait
// for a concurrent writer of the same row and then see its commit. Just
// before the commit the audit rows fn appended are sealed into the hash
// chain (see auditchain.go).
//
// fn gets the transaction as a Querier, never the *sql.Tx itself: the
// audit rows it appends through it join the chain (AppendAudit refuses a
// bare transaction), so no caller can append a row around the chain.
//
// On PostgreSQL a transaction that changed grants or rules (it bumped
// their counters) returns only once every replica holding a lease has
// installed its counters, or their leases ran out (see awaitAcks): at
// most 2 s after the commit. If ctx ends first it fails with
// ErrUnconfirmed, the change committed all the same.
func (db *DB) InTx(ctx context.Context, fn func(q Querier) error) error {
	unlock, err := db.lockWrite(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	_, endCursor := db.openCursor(tx)
	defer endCursor()
	q := db.tx(tx)
	if err := fn(q); err != nil {
		return err
	}
	// The audit rows fn appended join the hash chain as it commits.
	if err := db.sealAudit(ctx, q); err != nil {
		return err
	}
	vals, bumped, err := db.bumped(ctx, q)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if bumped {
		// Grants or rules changed: return once every replica deciding on
		// counters it knows has installed the change (see awaitAcks).
		// Only on PostgreSQL, which has no write slot to give back first.
		return db.awaitAcks(ctx, vals, time.Now())
	}
	return nil
}

// lockWrite takes this process's write slot (see DB.writeLock), waiting
// at most writeWait, as busy_timeout would, so a nested write fails
// instead of hanging. The returned function gives the slot back.
func (db *DB) lockWrite(ctx context.Context) (unlock func(), err error) {
	if db.writeLock == nil {
		return func() {}, nil
	}
	wait := time.NewTimer(writeWait)
	defer wait.Stop()
	select {
	case db.writeLock <- struct{}{}:
		return func() { <-db.writeLock }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-wait.C:
		return nil, ErrBusy
	}
}

// closeWait bounds how long Close waits for the connections still open.
const closeWait = 10 * time.Second

// Close closes the version sources made over the database (they hold a
// connection), the cached statements and the database, and waits for the
// last connection to close.
func (db *DB) Close() error {
	db.stopCheckpoints()
	db.versionsMu.Lock()
	versions := db.versions
	db.versions = nil
	db.versionsMu.Unlock()
	for _, v := range versions {
		v.Close()
	}
	if db.pg != nil {
		db.pg.versions.close()
	}
	pinned := db.wal.Swap(nil) // closed after the pool's connections
	db.stmtMu.Lock()
	for q, st := range db.stmts {
		st.Close()
		delete(db.stmts, q)
	}
	db.stmtMu.Unlock()
	err := db.DB.Close()
	if db.conns != nil {
		// A connection being opened for a caller that waited for one, or
		// one a statement prepared in the background holds, closes after
		// DB.Close returns: wait for it (see countedConnector).
		db.conns.wait(closeWait)
	}
	if pinned != nil {
		pinned.close()
	}
	if db.conns != nil {
		db.conns.removeWAL(db.Path)
	}
	return err
}
