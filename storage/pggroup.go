// The group commit on PostgreSQL: a group's transaction in three round
// trips, whatever its size, through pgx's pipelined batches.

package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgRollbackTimeout bounds the ROLLBACK of a group that failed; a
// connection that does not answer it is dropped from the pool.
const pgRollbackTimeout = 5 * time.Second

// tryGroupPG is tryGroup on PostgreSQL. Without savepoints the group's
// transaction takes three round trips (two for a group of GroupExecAudit
// calls alone, see below): its BEGIN and the first statement
// of every GroupExec call in one pipelined batch; the chain head's lock
// and the unsealed rows' read in a second, once the calls' own work is
// done (the head is still locked last); the sealing statement and the
// COMMIT in a third. Through database/sql each statement was a round trip
// of its own: BEGIN, an insert per call, the lock, the read, the seal and
// the COMMIT. The GroupExec calls' then and the GroupTx calls' functions
// run in between, on the same connection, through database/sql. With
// savepoints (after a call failed) the group runs as tryGroup runs it.
//
// A call decided on a pinned Basis is checked in the first round trip: the
// counters are read after the BEGIN, before the calls' statements. When
// one was decided on other counters it fails (ErrStaleBasis), the
// transaction is rolled back, and the others run again in a new one.
func (db *DB) tryGroupPG(ctx context.Context, batch []*groupOp, errs []error, savepoints bool) (failed error) {
	if savepoints {
		return db.tryGroup(ctx, batch, errs, true)
	}
	for {
		failed, again := db.tryGroupPGOnce(ctx, batch, errs)
		if !again || live(errs) == 0 {
			return failed
		}
	}
}

// tryGroupPGOnce is one transaction of tryGroupPG; again says that calls
// were found stale in it, and the others must run in another.
func (db *DB) tryGroupPGOnce(ctx context.Context, batch []*groupOp, errs []error) (failed error, again bool) {
	conn, err := db.DB.Conn(ctx)
	if err != nil {
		failAll(errs, err)
		return nil, false
	}
	defer conn.Close()
	t := &pgGroupTx{conn: conn}
	defer t.rollback()

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	check, pinned := checkGroups(), anyPinned(batch, errs)
	if check || pinned {
		b.Queue(pgCountersQuery)
	}
	var firsts []int // the GroupExec calls, by their index in batch
	for i, op := range batch {
		if errs[i] == nil && op.first.query != "" {
			b.Queue(op.first.query, op.first.args...)
			firsts = append(firsts, i)
		}
	}
	// A group whose calls all follow their statement with at most an
	// audit row (GroupExecAudit) runs no statement between its inserts and
	// the seal: the head is locked in the same batch, still after the
	// rows' own locks, and the group commits in two round trips.
	var head *pgHead
	if len(firsts) > 0 && len(firsts) == live(errs) && auditOnly(batch, firsts) {
		head = &pgHead{}
		b.Queue(selectHeadLocked)
		b.Queue(selectUnsealed)
	}
	affected := make([]int64, len(batch))
	var versions [2]int64
	var opErr error // the error of a call's first statement
	err = t.send(ctx, b, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if check || pinned {
			if err := br.QueryRow().Scan(&versions[0], &versions[1]); err != nil {
				return fmt.Errorf("check the grants and rules counters: %w", err)
			}
		}
		for _, i := range firsts {
			tag, err := br.Exec()
			if err != nil {
				opErr = err
				return err
			}
			affected[i] = tag.RowsAffected()
		}
		if head != nil {
			return head.read(br)
		}
		return nil
	})
	if err != nil && opErr == nil {
		failAll(errs, fmt.Errorf("group commit: %w", err))
		return nil, false
	}
	if pinned && markStale(batch, errs, versions) {
		return nil, true // rolled back; the others run again
	}
	if opErr != nil {
		return opErr, false // rolled back; the batch runs again with savepoints
	}
	q := txQuerier{db: db, run: conn, pga: &pgAudit{}}
	for _, i := range firsts {
		if err := batch[i].first.follow(q, affected[i]); err != nil {
			return err, false
		}
	}
	for i, op := range batch {
		if errs[i] == nil && op.first.query == "" {
			if err := op.fn(q); err != nil {
				return err, false
			}
		}
	}
	if check {
		if err := policyUnchanged(ctx, q, versions, false); err != nil {
			failAll(errs, err)
			return nil, false
		}
	}
	if err := db.sealCommitPG(ctx, t, q, head); err != nil {
		failAll(errs, fmt.Errorf("group commit: %w", err))
	}
	return nil, false
}

// pgOwnChange says whether the transaction asking wrote the grants' or
// the rules' counter: the row's xmin is its id (an xid is the low 32 bits
// of the xid8 pg_current_xact_id_if_assigned gives; NULL before it wrote
// anything).
const pgOwnChange = `SELECT COALESCE((SELECT xmin::text::bigint FROM grants_version WHERE id = 1) = x OR
  (SELECT xmin::text::bigint FROM ` + RulesVersionTable + ` WHERE id = 1) = x, false)
FROM (SELECT pg_current_xact_id_if_assigned()::text::bigint % 4294967296 AS x) AS own`

// queueOf is the queue op waits in. On SQLite there is one: one writer at
// a time, as the database allows. On PostgreSQL, which has row locks and
// many writers, the calls whose follow-up is at most an audit row
// (GroupExecAudit: decided-now requests) have a queue and a writer of
// their own, whose groups take two round trips whatever their size; the
// others (GroupTx, GroupExec with a then) run their statements one round
// trip at a time (a pending request: the cap's lock, the count, the
// insert, a card per messenger), and in one queue with them a decided-now
// call waited for all of those of its group and of the group before.
// 16 decided-now callers beside 4 pending-like ones: p50 3.5 ms with one
// queue, 0.6–1.0 ms with two (BenchmarkGroupTx_AuditOnlyBesideOthersPostgres).
// Both writers lock the chain's head last, after their own rows, as two
// replicas' writers do.
func (db *DB) queueOf(op *groupOp) *groupCommit {
	if db.pg == nil || op.first.audit != nil {
		return &db.group
	}
	return &db.pg.slowGroup
}

// sealCommitPG seals q's audit rows into the chain, as sealPG does, and
// commits: two round trips, or one when the head was locked and read
// already (head not nil).
func (db *DB) sealCommitPG(ctx context.Context, t *pgGroupTx, q txQuerier, head *pgHead) error {
	if head == nil && len(q.pga.rows) == 0 {
		// Nothing of the group's own to seal (every call was a repeat):
		// only committed rows left unsealed, if any, as InTx would.
		if err := db.sealAudit(ctx, q); err != nil {
			return err
		}
		return t.commit(ctx, &pgx.Batch{})
	}
	if head == nil {
		head = &pgHead{}
		b := &pgx.Batch{}
		b.Queue(selectHeadLocked)
		b.Queue(selectUnsealed)
		if err := t.send(ctx, b, head.read); err != nil {
			return err
		}
	}
	query, args, err := sealPGArgs(head.seq, head.hash, head.others, q.pga.rows)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	b.Queue(query, args...)
	return t.commit(ctx, b)
}

// pgHead is the chain's head, locked, and the committed rows found
// unsealed under the lock: the answers of selectHeadLocked and
// selectUnsealed, queued in this order.
type pgHead struct {
	seq    int64
	hash   string
	others []AuditEvent
}

// read reads the two answers from br.
func (h *pgHead) read(br pgx.BatchResults) error {
	if err := br.QueryRow().Scan(&h.seq, &h.hash); err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return fmt.Errorf("seal audit: %w", err)
	}
	h.others, err = scanUnsealedPG(rows)
	return err
}

// live counts the calls of a batch still to run (no error yet).
func live(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}

// auditOnly says whether the calls at firsts all follow their statement
// with at most an audit row (GroupExecAudit).
func auditOnly(batch []*groupOp, firsts []int) bool {
	for _, i := range firsts {
		if batch[i].first.audit == nil {
			return false
		}
	}
	return true
}

// scanUnsealedPG is scanUnsealed's reading of selectUnsealed, from pgx.
func scanUnsealedPG(rows pgx.Rows) ([]AuditEvent, error) {
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var grant *int64
		if err := rows.Scan(&e.ID, &e.at, &e.Actor, &e.Event, &e.RequestID, &grant, &e.detail); err != nil {
			return nil, fmt.Errorf("seal audit: %w", err)
		}
		if grant != nil {
			e.grant = strconv.FormatInt(*grant, 10)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("seal audit: %w", err)
	}
	return out, nil
}

// pgGroupTx is a transaction pgx began on a connection database/sql lent
// (conn): the pipelined batches go to the pgx connection under it, the
// calls' statements through conn.
type pgGroupTx struct {
	conn      *sql.Conn
	committed bool
}

// send sends b in one round trip and reads its results with read, then
// the rest.
func (t *pgGroupTx) send(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	return t.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("storage: a PostgreSQL connection of type %T", dc)
		}
		br := c.Conn().SendBatch(ctx, b)
		err := read(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// errRolledBack says a COMMIT found the transaction failed.
var errRolledBack = errors.New("commit: the transaction was rolled back")

// commit sends b's statements and then COMMIT, in one round trip.
func (t *pgGroupTx) commit(ctx context.Context, b *pgx.Batch) error {
	n := b.Len()
	b.Queue("COMMIT")
	err := t.send(ctx, b, func(br pgx.BatchResults) error {
		for range n {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("seal audit rows: %w", err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if tag.String() != "COMMIT" {
			return errRolledBack
		}
		t.committed = true
		return nil
	})
	if t.committed {
		return nil // committed: what the rest of the batch said does not change it
	}
	return err
}

// rollback ends the transaction unless it committed. A connection that
// cannot say it is out of it is not given back to the pool (database/sql
// drops it: driver.ErrBadConn).
func (t *pgGroupTx) rollback() {
	if t.committed {
		return
	}
	_ = t.conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return driver.ErrBadConn
		}
		pc := c.Conn()
		if pc.IsClosed() {
			return driver.ErrBadConn
		}
		if pc.PgConn().TxStatus() == 'I' {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), pgRollbackTimeout)
		defer cancel()
		if _, err := pc.Exec(ctx, "ROLLBACK"); err != nil || pc.PgConn().TxStatus() != 'I' {
			return driver.ErrBadConn
		}
		return nil
	})
}
