package storage

import (
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable says whether err means the database cannot be reached or is
// held by another writer for too long: a PostgreSQL server that is down,
// restarting or cut off (no connection, a connection that broke, the
// server shutting down, too many connections, a pooled connection pgx
// found already closed), or a SQLite file another
// process keeps locked past the busy timeout. The same call may succeed
// later, so the API answers 503 unavailable with Retry-After instead of
// 500 internal (which says "a bug: do not retry"). Anything else, a
// constraint or a syntax error included, is not.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-03: the server is shutting
		// down, crashed or starting; 53300: too many connections.
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", "53300":
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08")
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	var liteErr *sqlite.Error
	switch {
	case errors.Is(err, ErrBusy), errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pgconn.ErrConnClosed):
		return true
	case errors.As(err, &connect), errors.As(err, &netErr):
		return true
	case errors.As(err, &liteErr):
		code := liteErr.Code() & 0xff // the primary code of an extended one
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return false
}

// Outage logs a database outage once when it starts and once when it
// ends, for the work that runs beside the requests (the expiry sweep every
// second, the card dispatchers, the timers, the replica's sessions):
// without it, each of them logged every failure of the whole outage. Every
// DB has one (DB.Outage); its zero value is ready.
//
// Each report says when its call began (time.Now, monotonic): a call that
// began before the last change of state says nothing about the database
// now. A sweep that reached the database just before it went away must not
// end the outage another call has just seen begin, nor a connection
// refused just before the database came back start a new one.
type Outage struct {
	mu    sync.Mutex
	since time.Time // when the outage was seen to begin; zero while the database answers
	ended time.Time // when the last one was seen to end
	what  string    // the work that first failed
	calls int       // failures since
}

// Failed notes that the work named what, begun at began, failed with err.
// An err that is not Unavailable is not an outage: Failed returns false
// and the caller logs it as it would any error. Otherwise it returns true,
// and the first failure of an outage is logged (at ERROR, once).
func (o *Outage) Failed(log *slog.Logger, what string, began time.Time, err error) bool {
	if !Unavailable(err) {
		return false
	}
	o.mu.Lock()
	first := o.since.IsZero() && !began.Before(o.ended)
	if first {
		o.since, o.what, o.calls = time.Now(), what, 0
	}
	o.calls++
	o.mu.Unlock()
	if first {
		log.Error("database unreachable; the calls and background work that need it fail until it is back "+
			"(logged once, and again when it ends)", "work", what, "err", err)
	}
	return true
}

// Reached notes that work begun at began reached the database: an outage
// under way since before began ends, and is logged (once) with how long
// it lasted.
func (o *Outage) Reached(log *slog.Logger, began time.Time) {
	o.mu.Lock()
	since, what, calls := o.since, o.what, o.calls
	end := !since.IsZero() && !began.Before(since)
	if end {
		o.since, o.ended = time.Time{}, time.Now()
	}
	o.mu.Unlock()
	if end {
		log.Info("database reachable again", "work", what, "failures", calls,
			"outage", time.Since(since).Round(time.Millisecond).String())
	}
}

// Down says whether an outage is under way.
func (o *Outage) Down() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.since.IsZero()
}
