package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The statements of this file.
const (
	selectCursor = `SELECT value FROM cursors WHERE name = $1`
	insertCursor = `INSERT INTO cursors (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`
	moveCursor   = `UPDATE cursors SET value = $1 WHERE name = $2 AND value = $3`
)

// ErrCursorMoved says a cursor was no longer where its mover read it:
// another replica (a leader before this one) moved it meanwhile.
var ErrCursorMoved = errors.New("the cursor was moved meanwhile")

// Cursor reads the named cursor (table cursors: how far a leader's loop
// has handled the audit chain, or another position of its own); ok is
// false when it was never set.
func Cursor(ctx context.Context, q Querier, name string) (value int64, ok bool, err error) {
	err = q.QueryRowContext(ctx, selectCursor, name).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read cursor %s: %w", name, err)
	}
	return value, true, nil
}

// MoveCursor moves the named cursor from to to, in q's transaction: the
// work the move records commits with it or not at all. ErrCursorMoved
// when the cursor is no longer at from (the transaction must then roll
// back). A cursor never set is set when from is 0 and it is still unset.
func MoveCursor(ctx context.Context, q Querier, name string, from, to int64) error {
	res, err := q.ExecContext(ctx, moveCursor, to, name, from)
	if err != nil {
		return fmt.Errorf("move cursor %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		return nil
	}
	if from != 0 {
		return ErrCursorMoved
	}
	res, err = q.ExecContext(ctx, insertCursor, name, to)
	if err != nil {
		return fmt.Errorf("set cursor %s: %w", name, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return ErrCursorMoved
	}
	return nil
}

// AuditAfter returns the sealed audit rows after seq of the given events,
// oldest first, at most limit: what a loop whose cursor is at after has
// yet to handle. Read the chain's head (AuditHead) before it: every row up
// to that head is committed, so none of them is missing here.
func (db *DB) AuditAfter(ctx context.Context, after int64, limit int, events ...string) ([]AuditEvent, error) {
	if len(events) == 0 {
		return nil, nil
	}
	args := []any{after, limit}
	marks := make([]string, len(events))
	for i, e := range events {
		args = append(args, e)
		marks[i] = "$" + strconv.Itoa(len(args))
	}
	out, err := auditRows(db.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit WHERE seq > $1 AND event IN (`+
		strings.Join(marks, ", ")+`) ORDER BY seq LIMIT $2`, args...))
	if err != nil {
		return nil, fmt.Errorf("query audit: %w", err)
	}
	return out, nil
}

// CapLock makes the transaction tx the only one, among every replica's,
// that counts against the cap named key until it ends: on PostgreSQL a
// transaction-level advisory lock on the key's hash, so that two
// replicas' concurrent transactions (read committed) cannot both count
// below a cap and both insert. SQLite admits one writer at a time
// already: nothing to do there.
func (db *DB) CapLock(ctx context.Context, tx Querier, key string) error {
	if db.Dialect != Postgres {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	return nil
}
