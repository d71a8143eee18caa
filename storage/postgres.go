package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgState is what a PostgreSQL DB keeps besides its pool: the connection
// config for the dedicated sessions (LISTEN, the leader lock) and the names
// and keys derived from the schema, so that two gateways in two schemas of
// one database neither wake nor lead each other.
type pgState struct {
	conf       *pgx.ConnConfig
	name       string // postgres://user@host:port/database, for messages
	schema     string
	channel    string // the NOTIFY channel of this schema
	origin     string // this process's tag on its notices, so it skips its own
	leaderKey  int64  // advisory lock keys
	migrateKey int64
	versions   pgVersions // the change counters' read barrier
	lease      pgLease    // this replica's lease on the counters (HoldLease)
	// slowGroup is the group commit queue of the calls that run
	// statements of their own (see queueOf).
	slowGroup groupCommit
}

// pgMaxConns is the pool size on PostgreSQL. Unlike SQLite every query is
// a network round trip, and writers do not exclude each other, so more
// connections than cores keep the CPU busy.
func pgMaxConns() int { return max(10, 4*runtime.GOMAXPROCS(0)) }

// Timeouts of the dedicated sessions.
const (
	pgConnectTimeout = 10 * time.Second
	// pgIdleSessionTimeout ends a leader or follower session the server
	// has not heard from for this long (PostgreSQL 14+), releasing the
	// leader lock of a replica that hangs or is cut off: the leader checks
	// its session every LeaderOptions.Retry, and steps down when a check
	// fails, well before this.
	pgIdleSessionTimeout = 15 * time.Second
	pgPingTimeout        = 3 * time.Second
)

// OpenPostgres opens the PostgreSQL database dsn names (a postgres:// URL
// or keyword/value string; pgx reads the usual PG* variables and
// ~/.pgpass too) and migrates it. Tables go in the current schema (the
// first of search_path that exists, normally public). Replicas starting
// at once migrate one after the other.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("storage: empty PostgreSQL DSN (set GATEWAY_DATABASE_URL or the variable storage.dsn_env names)")
	}
	conf, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: PostgreSQL DSN: %w", err) // pgx redacts the password
	}
	if conf.RuntimeParams["application_name"] == "" {
		conf.RuntimeParams["application_name"] = "metnos-gateway"
	}
	timeout := conf.ConnectTimeout
	if timeout <= 0 {
		timeout = pgConnectTimeout
	}
	// Keepalives find a dead server (or a cut network) in about 25 s
	// instead of the kernel's two hours, for the pool and for the LISTEN
	// session, which otherwise waits on a silent socket forever.
	conf.DialFunc = (&net.Dialer{Timeout: timeout,
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 10 * time.Second, Interval: 5 * time.Second, Count: 3},
	}).DialContext
	name := fmt.Sprintf("postgres://%s@%s:%d/%s", conf.User, conf.Host, conf.Port, conf.Database)
	sqldb := stdlib.OpenDB(*conf)
	n := pgMaxConns()
	sqldb.SetMaxOpenConns(n)
	sqldb.SetMaxIdleConns(n)
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	var schema sql.NullString
	if err := sqldb.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", name, err)
	}
	if !schema.Valid {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: no schema of the search_path exists (create it, or fix search_path)", name)
	}
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	pg := &pgState{
		conf: conf, name: name, schema: schema.String, origin: hex.EncodeToString(tag[:]),
		channel:    notifyChannel(schema.String),
		leaderKey:  lockKey("leader", schema.String),
		migrateKey: lockKey("migrate", schema.String),
	}
	db := &DB{DB: sqldb, Dialect: Postgres, pg: pg, stmts: map[string]*sql.Stmt{}}
	pg.versions.db = db
	if err := db.migrate(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("migrate %s: %w", name, err)
	}
	return db, nil
}

// notifyChannel is the NOTIFY channel of a schema: gateway_events for
// public, else suffixed, within PostgreSQL's 63-byte identifiers.
func notifyChannel(schema string) string {
	if schema == "public" {
		return "gateway_events"
	}
	c := "gateway_events_" + schema
	if len(c) > 63 {
		h := fnv.New64a()
		h.Write([]byte(schema))
		c = fmt.Sprintf("gateway_events_%016x", h.Sum64())
	}
	return c
}

// lockKey is the advisory lock key of one purpose in one schema.
func lockKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("metnos-gateway/" + purpose + "/" + schema))
	return int64(h.Sum64())
}

// connect opens a dedicated session (not from the pool) with the same
// settings as the pool's.
func (p *pgState) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, pgConnectTimeout)
	defer cancel()
	return pgx.ConnectConfig(cctx, p.conf.Copy())
}

// Notify queues a change notice for the other processes on this database
// (the other replicas): msg reaches their Listen when the transaction of q
// commits, and never if it rolls back. On SQLite there is only one process
// and Notify does nothing.
func (db *DB) Notify(ctx context.Context, q Querier, msg string) error {
	if db.pg == nil {
		return nil
	}
	if _, err := q.ExecContext(ctx, `SELECT pg_notify($1, $2)`, db.pg.channel, db.pg.origin+" "+msg); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// Listen calls fn with every notice other processes send with Notify, in
// order, until ctx ends; a process never hears its own. It keeps one
// dedicated session and reconnects after a failure. Notices sent while it
// was not listening are lost, so fn("") follows every connection: the
// caller then re-reads whatever it is waiting for. On SQLite Listen
// returns at once.
func (db *DB) Listen(ctx context.Context, log *slog.Logger, fn func(msg string)) error {
	if db.pg == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fails := 0
	for ctx.Err() == nil {
		began := time.Now()
		listened, err := db.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			break
		}
		if listened {
			fails = 0
			began = time.Now() // a session that worked broke now
		}
		fails++
		if !db.Outage.Failed(log, "database notices", began, err) && (fails == 1 || fails%30 == 0) {
			log.Warn("database notices: session lost; reconnecting", "attempt", fails, "err", err)
		}
		sleepCtx(ctx, min(time.Duration(fails)*200*time.Millisecond, 5*time.Second))
	}
	return nil
}

func (db *DB) listenOnce(ctx context.Context, fn func(string)) (listened bool, err error) {
	conn, err := db.pg.connect(ctx)
	if err != nil {
		return false, err
	}
	defer closeSession(conn)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{db.pg.channel}.Sanitize()); err != nil {
		return false, err
	}
	fn("")
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		origin, msg, _ := strings.Cut(n.Payload, " ")
		if origin != db.pg.origin {
			fn(msg)
		}
	}
}

// LeaderOptions tunes Lead.
type LeaderOptions struct {
	// Retry is how often a follower tries to take the leader lock and how
	// often the leader checks that its session is alive (default 2 s).
	// A dead leader's lock is free at once when its process died, so
	// another replica leads within Retry.
	Retry  time.Duration
	Logger *slog.Logger
	// OnChange is told when this process starts leading (true) and, once
	// the leader work has stopped, when it no longer leads (false).
	OnChange func(leader bool)
}

// errLostLead ends one term of leadership whose session failed.
var errLostLead = errors.New("lost the leader session")

// Lead runs lead while this process is the leader, and waits to become
// leader again when it loses the lead, until ctx ends. The leader is the
// one process among those on this database that runs the work that must
// not run twice: polling Telegram, Slack Socket Mode, the card dispatchers
// and the prune job.
//
// On PostgreSQL the leader holds a session-level advisory lock on a
// dedicated connection: it is released when that session ends, by a clean
// shutdown, a crash or kill -9 of the process (the server sees the socket
// close), or the server's idle_session_timeout when the process hangs or
// is cut off. The leader checks its session every Retry and, when the
// check fails, cancels lead's context and waits for it to return before it
// says it stepped down. lead must return when its context ends; an error
// it returns before that ends Lead with that error. On SQLite there is one
// process: it leads from the start, until ctx ends.
func (db *DB) Lead(ctx context.Context, o LeaderOptions, lead func(ctx context.Context) error) error {
	if o.Retry <= 0 {
		o.Retry = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnChange == nil {
		o.OnChange = func(bool) {}
	}
	if db.pg == nil {
		o.OnChange(true)
		defer o.OnChange(false)
		return lead(ctx)
	}
	var conn *pgx.Conn
	closeConn := func() {
		if conn != nil {
			closeSession(conn) // ends the session: the lock is free
			conn = nil
		}
	}
	defer closeConn()
	fails := 0
	for ctx.Err() == nil {
		began := time.Now()
		if conn == nil || conn.IsClosed() {
			c, err := db.pg.connect(ctx)
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				fails++
				if !db.Outage.Failed(o.Logger, "leader election", began, err) && (fails == 1 || fails%30 == 0) {
					o.Logger.Warn("leader election: cannot reach the database; retrying", "attempt", fails, "err", err)
				}
				sleepCtx(ctx, o.Retry)
				continue
			}
			conn = c
			// PostgreSQL 14+; older servers refuse the setting, and then
			// only the TCP keepalives catch a leader that hangs.
			idle := max(pgIdleSessionTimeout, 3*o.Retry+pgPingTimeout)
			_, _ = conn.Exec(ctx, fmt.Sprintf("SET idle_session_timeout = %d", idle.Milliseconds()))
		}
		var got bool
		qctx, cancel := context.WithTimeout(ctx, pgPingTimeout)
		err := conn.QueryRow(qctx, `SELECT pg_try_advisory_lock($1)`, db.pg.leaderKey).Scan(&got)
		cancel()
		if err != nil {
			closeConn()
			if ctx.Err() != nil {
				break
			}
			fails++
			if !db.Outage.Failed(o.Logger, "leader election", began, err) && (fails == 1 || fails%30 == 0) {
				o.Logger.Warn("leader election: lock query failed; retrying", "attempt", fails, "err", err)
			}
			sleepCtx(ctx, o.Retry)
			continue
		}
		fails = 0
		if !got {
			sleepCtx(ctx, o.Retry)
			continue
		}
		err = db.holdLead(ctx, conn, o, lead)
		closeConn()
		if !errors.Is(err, errLostLead) {
			return err
		}
	}
	return nil
}

// holdLead runs one term: lead runs while the session answers.
func (db *DB) holdLead(ctx context.Context, conn *pgx.Conn, o LeaderOptions, lead func(context.Context) error) error {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	o.Logger.Info("leader: this replica now leads (polling, Socket Mode, card dispatch, prune)", "leader", true)
	o.OnChange(true)
	go func() { done <- lead(lctx) }()
	stop := func(why string, args ...any) {
		cancel()
		<-done
		o.OnChange(false)
		o.Logger.Info("leader: stepped down; "+why, append(args, "leader", false)...)
	}
	t := time.NewTicker(o.Retry)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			o.OnChange(false)
			return err
		case <-ctx.Done():
			stop("shutting down")
			return nil
		case <-t.C:
			pctx, pcancel := context.WithTimeout(ctx, pgPingTimeout)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil && ctx.Err() == nil {
				stop("its database session failed", "err", err)
				return errLostLead
			}
		}
	}
}

// closeSession ends a dedicated session, waiting a little at most for a
// server that no longer answers.
func closeSession(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
