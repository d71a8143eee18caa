// The statements: the cache of prepared statements every query goes through
// (on the database and in a transaction), and SQLite's anonymous parameters.

package storage

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// maxStmts bounds the statement cache; a query past it runs unprepared.
// The gateway's SQL is a few dozen constants.
const maxStmts = 256

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
func (db *DB) tx(tx *sql.Tx) txQuerier {
	q := txQuerier{db: db, tx: tx, run: tx}
	if db.pg != nil {
		q.pga = &pgAudit{}
	}
	return q
}

type txQuerier struct {
	db  *DB
	tx  *sql.Tx  // nil in a PostgreSQL group commit, whose transaction pgx began (see tryGroupPG)
	run runner   // tx, or the connection holding the transaction
	pga *pgAudit // PostgreSQL: the audit rows appended, inserted at commit (see sealPG)
}

// runner runs statements: a *sql.Tx, or a *sql.Conn inside a transaction
// begun on it.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
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
	return q.run.ExecContext(ctx, query, args...)
}

func (q txQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := q.txStmt(query); st != nil {
		return q.bound(ctx, st).QueryContext(ctx, args...)
	}
	return q.run.QueryContext(ctx, query, args...)
}

func (q txQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := q.txStmt(query); st != nil {
		return q.bound(ctx, st).QueryRowContext(ctx, args...)
	}
	return q.run.QueryRowContext(ctx, query, args...)
}
