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
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite" // pure Go, no cgo
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

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

// ErrTooNew is returned when the database was migrated by a newer binary.
var ErrTooNew = errors.New("database schema is newer than this binary")

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

	group groupCommit // see GroupTx

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

// ErrBusy is returned by InTx after waiting writeWait for another write.
var ErrBusy = errors.New("storage: database busy: another write held it for too long")

// maxStmts bounds the statement cache; a query past it runs unprepared.
// The gateway's SQL is a few dozen constants.
const maxStmts = 256

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
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
		"&_pragma=synchronous(NORMAL)&_pragma=temp_store(MEMORY)&_pragma=journal_size_limit(67108864)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
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
	return out, nil
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

// Ping checks the database answers a query (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
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
	if err := fn(db.tx(tx)); err != nil {
		return err
	}
	// The audit rows fn appended join the hash chain as it commits.
	if err := db.sealAudit(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
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

// stmt returns the cached prepared statement of query, preparing it on
// first use; nil when it cannot be cached (then the caller runs it
// unprepared).
func (db *DB) stmt(ctx context.Context, query string) *sql.Stmt {
	if db.pg != nil {
		return nil // pgx keeps its own cache of prepared statements per connection
	}
	db.stmtMu.RLock()
	st := db.stmts[query]
	db.stmtMu.RUnlock()
	if st != nil {
		return st
	}
	// Only single statements: preparing "a; b" would run just a.
	if strings.Contains(strings.TrimRight(strings.TrimSpace(query), ";"), ";") {
		return nil
	}
	// Prepare without the lock: preparing needs a connection, and the
	// holders of every connection may be waiting for this lock.
	st, err := db.DB.PrepareContext(ctx, anonymous(query))
	if err != nil {
		return nil // the unprepared call reports the error
	}
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if cur := db.stmts[query]; cur != nil || len(db.stmts) >= maxStmts {
		st.Close()
		return cur
	}
	db.stmts[query] = st
	return st
}

// anonymous returns query with its parameters $1 … $n written "?" when
// they appear in that order, each once (outside quoted text), and query
// as it is otherwise. SQLite binds "$1" by name, and the driver looks up
// and copies every parameter's name on every call: a tenth of the cost of
// a wide INSERT.
func anonymous(query string) string {
	var b strings.Builder
	next := 1
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '$':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			if n, err := strconv.Atoi(query[i+1 : j]); err != nil || n != next {
				return query
			}
			next++
			b.WriteByte('?')
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ExecContext is sql.DB.ExecContext through the statement cache.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := db.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return db.DB.ExecContext(ctx, query, args...)
}

// QueryContext is sql.DB.QueryContext through the statement cache.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := db.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return db.DB.QueryContext(ctx, query, args...)
}

// QueryRowContext is sql.DB.QueryRowContext through the statement cache.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := db.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return db.DB.QueryRowContext(ctx, query, args...)
}

// tx returns the Querier InTx and GroupTx hand their functions: tx with
// the statement cache, through which audit rows join the chain.
func (db *DB) tx(tx *sql.Tx) Querier { return txQuerier{db: db, tx: tx} }

type txQuerier struct {
	db *DB
	tx *sql.Tx
}

// txStmt returns the cached statement of query for use in a transaction,
// or nil. It never prepares one itself: preparing needs a second
// connection, and the transaction holds the write lock that the holders of
// every other connection may be waiting for (a deadlock until the busy
// timeout). A statement not cached yet runs unprepared on the transaction
// and is prepared in the background, for the next time.
func (q txQuerier) txStmt(query string) *sql.Stmt {
	if q.db.pg != nil {
		return nil
	}
	q.db.stmtMu.RLock()
	st := q.db.stmts[query]
	q.db.stmtMu.RUnlock()
	if st == nil {
		if _, started := q.db.warming.LoadOrStore(query, true); !started {
			go q.db.stmt(context.Background(), query)
		}
	}
	return st
}

// bound is st bound to the transaction. A transaction of InTx or GroupTx
// binds each statement once (the group's writer ran the same two inserts
// for every call of its group, and each binding is an allocation and a
// trip through database/sql's locks).
func (q txQuerier) bound(ctx context.Context, st *sql.Stmt) *sql.Stmt {
	c := q.db.cursor.Load()
	if c == nil || c.tx != q.tx {
		return q.tx.StmtContext(ctx, st)
	}
	if b := c.stmts[st]; b != nil {
		return b
	}
	b := q.tx.StmtContext(ctx, st)
	if c.stmts == nil {
		c.stmts = map[*sql.Stmt]*sql.Stmt{}
	}
	c.stmts[st] = b
	return b
}

func (q txQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := q.txStmt(query); st != nil {
		return q.bound(ctx, st).ExecContext(ctx, args...)
	}
	return q.tx.ExecContext(ctx, query, args...)
}

func (q txQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.txStmt(query); st != nil {
		return q.bound(ctx, st).QueryContext(ctx, args...)
	}
	return q.tx.QueryContext(ctx, query, args...)
}

func (q txQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.txStmt(query); st != nil {
		return q.bound(ctx, st).QueryRowContext(ctx, args...)
	}
	return q.tx.QueryRowContext(ctx, query, args...)
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
	if w := db.wal.Swap(nil); w != nil {
		defer w.close() // after the pool's connections: the last to close removes the WAL
	}
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
	return err
}
