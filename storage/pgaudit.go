// The audit chain on PostgreSQL: a transaction's rows are kept until its
// commit, then numbered, hashed and inserted in one statement.

package storage

import (
	"context"
	"fmt"
	"strconv"
)

// pgAudit holds the audit rows a PostgreSQL transaction (InTx, GroupTx)
// appended. They are not inserted as they come: sealPG inserts them all at
// commit, already numbered and hashed, in the statement that also moves
// the chain's head, after taking the head's lock. A group commit's rows
// then cost one statement for the whole group instead of an insert and a
// rewrite each.
type pgAudit struct {
	rows []pgAuditRow
}

// pgAuditRow is one row as it will be stored (and hashed).
type pgAuditRow struct {
	at, actor, event, requestID string
	grantID                     int64
	detail                      []byte // nil: NULL
	agent, capability           string
}

// add keeps rec for the commit.
func (a *pgAudit) add(rec AuditRecord) {
	e := rec.e
	a.rows = append(a.rows, pgAuditRow{at: FormatTime(e.At), actor: e.Actor, event: e.Event, requestID: e.RequestID,
		grantID: e.GrantID, detail: rec.detail, agent: rec.agent, capability: rec.capability})
}

// mark and rollback keep the rows in step with a savepoint: rows added
// after mark are dropped when the savepoint is rolled back.
func (a *pgAudit) mark() int {
	if a == nil {
		return 0
	}
	return len(a.rows)
}

func (a *pgAudit) rollback(to int) {
	if a != nil {
		a.rows = a.rows[:to]
	}
}

// sealPGRows seals, in one statement, the committed rows found unsealed
// (ids, in id order; rare: rows from before the chain or from another
// writer) and inserts the transaction's own rows after them, then moves
// the head. $1–$3 are the unsealed rows' id, seq, hash; $4–$13 the new
// rows' columns; $14, $15 the head.
const sealPGRows = `WITH sealed AS (
  UPDATE audit SET seq = u.seq, hash = u.hash
  FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, seq, hash) WHERE audit.id = u.id
), added AS (
  INSERT INTO audit (at, actor, event, request_id, grant_id, detail, agent, capability, seq, hash)
  SELECT * FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::text[],
    $12::bigint[], $13::text[])
)
UPDATE audit_chain SET seq = $14, hash = $15 WHERE id = 1`

// sealPGNew is sealPGRows when no committed row is left unsealed (the
// usual case): the new rows' columns are $1–$10, the head $11, $12.
// PostgreSQL planned sealPGRows afresh at every execution (a custom plan
// for the arrays given, never the generic one): 0.12 ms median at bind in
// the statement log, the largest part of a group's transaction on the
// server. This statement has no join, and PostgreSQL switches to its
// generic plan after five executions: 0.01 ms. (A generic plan of
// sealPGRows, made while the audit table is small, would scan the table.)
const sealPGNew = `WITH added AS (
  INSERT INTO audit (at, actor, event, request_id, grant_id, detail, agent, capability, seq, hash)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[],
    $9::bigint[], $10::text[])
)
UPDATE audit_chain SET seq = $11, hash = $12 WHERE id = 1`

// sealPG numbers and hashes, after the chain's head, the committed rows
// left unsealed and then the rows q's transaction appended, and stores
// them: the head is locked (until the commit) and the unsealed rows read
// again under the lock, as sealAudit does, then one statement writes all.
func (db *DB) sealPG(ctx context.Context, q txQuerier) error {
	seq, prev, err := db.lockHead(ctx, q)
	if err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	others, err := scanUnsealed(ctx, q)
	if err != nil {
		return err
	}
	query, args, err := sealPGArgs(seq, prev, others, q.pga.rows)
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, query, args...); err != nil {
		return fmt.Errorf("seal audit rows: %w", err)
	}
	return nil
}

// sealPGArgs is the statement that stores the unsealed committed rows
// others, then rows, numbered and hashed after the head (seq, prev), and
// its arguments: sealPGRows, or sealPGNew when others is empty.
func sealPGArgs(seq int64, prev string, others []AuditEvent, rows []pgAuditRow) (string, []any, error) {
	var err error
	ids, oseq, ohash := make([]int64, len(others)), make([]int64, len(others)), make([]string, len(others))
	for i := range others {
		e := &others[i]
		seq++
		if prev, err = chainHash(prev, e.canonical()); err != nil {
			return "", nil, err
		}
		ids[i], oseq[i], ohash[i] = e.ID, seq, prev
	}
	n := len(rows)
	var (
		at, actor, event              = make([]string, n), make([]string, n), make([]string, n)
		request, detail, agent, capab = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		grant                         = make([]*int64, n)
		nseq                          = make([]int64, n)
		nhash                         = make([]string, n)
	)
	for i := range rows {
		r := &rows[i]
		g := ""
		if r.grantID != 0 {
			g = strconv.FormatInt(r.grantID, 10)
			grant[i] = &r.grantID
		}
		seq++
		if prev, err = chainHash(prev, canonical(r.at, r.actor, r.event, r.requestID, g, string(r.detail))); err != nil {
			return "", nil, err
		}
		at[i], actor[i], event[i], nseq[i], nhash[i] = r.at, r.actor, r.event, seq, prev
		request[i], agent[i], capab[i] = optString(r.requestID), optString(r.agent), optString(r.capability)
		if r.detail != nil {
			d := string(r.detail)
			detail[i] = &d
		}
	}
	if len(others) == 0 {
		return sealPGNew, []any{at, actor, event, request, grant, detail, agent, capab, nseq, nhash, seq, prev}, nil
	}
	return sealPGRows, []any{ids, oseq, ohash, at, actor, event, request, grant, detail, agent, capab, nseq, nhash, seq, prev}, nil
}

// optString is s, or nil (NULL) when empty, as nullString stores it.
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
