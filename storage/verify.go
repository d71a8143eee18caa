package storage

import (
	"context"
	"fmt"
)

// AuditVerdict is what VerifyAudit found.
type AuditVerdict struct {
	OK       bool
	Rows     int   // rows of the chain checked (genesis or checkpoint included)
	Legacy   int   // rows from before the chain existed: not covered by it
	FirstSeq int64 // the first row of the chain
	LastSeq  int64 // the last row checked
	LastHash string
	// BadSeq is the first row at fault, and Problem says how: "changed",
	// "inserted" or "removed" (for "removed", BadSeq is the first missing
	// position).
	BadSeq  int64
	Problem string
	Message string // one line for a person
}

// Summary is the line `gateway audit verify` prints.
func (v AuditVerdict) Summary() string {
	if !v.OK {
		return "FAILED: " + v.Message
	}
	s := fmt.Sprintf("ok: %d rows, chain intact", v.Rows)
	if v.Legacy > 0 {
		s += fmt.Sprintf(" (%d older rows predate the chain and are not covered)", v.Legacy)
	}
	return s
}

// AuditAnchor is a row's hash kept outside the database (exported by
// `gateway audit verify` or a SIEM): VerifyAudit then also proves that the
// chain up to that row was not rewritten as a whole.
type AuditAnchor struct {
	Seq  int64
	Hash string
}

// VerifyAudit recomputes the whole chain, oldest first, and reports the
// first row that was changed, inserted or removed. It holds no lock:
// rows appended while it reads are checked if its query sees them.
func (db *DB) VerifyAudit(ctx context.Context, anchor *AuditAnchor) (AuditVerdict, error) {
	var v AuditVerdict
	var headSeq int64
	var headHash string
	if err := db.QueryRowContext(ctx, selectHead).Scan(&headSeq, &headHash); err != nil {
		return v, fmt.Errorf("verify audit: chain head: %w", err)
	}
	rows, err := db.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit WHERE seq IS NOT NULL ORDER BY seq`)
	if err != nil {
		return v, fmt.Errorf("verify audit: %w", err)
	}
	defer rows.Close()
	var scanErr error
	next := func() *AuditEvent {
		if scanErr != nil || !rows.Next() {
			return nil
		}
		e, err := scanAudit(rows)
		if err != nil {
			scanErr = err
			return nil
		}
		return &e
	}
	fail := func(seq int64, problem, format string, args ...any) (AuditVerdict, error) {
		v.OK, v.BadSeq, v.Problem, v.Message = false, seq, problem, fmt.Sprintf(format, args...)
		return v, nil
	}
	done := func() (AuditVerdict, error) {
		if scanErr != nil {
			return v, fmt.Errorf("verify audit: %w", scanErr)
		}
		if err := rows.Err(); err != nil {
			return v, fmt.Errorf("verify audit: %w", err)
		}
		return v, nil
	}

	cur := next()
	for cur != nil && cur.Hash == "" {
		v.Legacy++
		cur = next()
	}
	if cur == nil {
		if _, err := done(); err != nil {
			return v, err
		}
		if headHash != "" || v.Legacy > 0 {
			return fail(headSeq, "removed", "the chain has no rows, but its head is at row %d: they were removed", headSeq)
		}
		v.OK = true
		return v, nil
	}
	v.FirstSeq = cur.Seq
	var prev string
	var confirmSeq int64
	var confirmHash string
	switch cur.Event {
	case AuditGenesis:
	case AuditCheckpoint:
		// Its hash is the last removed row's: taken as given, and
		// confirmed below by the prune row that left it.
		confirmSeq, confirmHash = cur.Seq, cur.Hash
		prev = cur.Hash
		v.Rows, v.LastSeq, v.LastHash = 1, cur.Seq, cur.Hash
		cur = next()
	default:
		return fail(cur.Seq-1, "removed", "row %d is the first of the chain but neither its genesis nor a prune checkpoint: "+
			"the rows before it were removed", cur.Seq)
	}
	if anchor != nil && anchor.Seq < v.FirstSeq {
		return fail(anchor.Seq, "removed", "row %d, whose hash was kept, is no longer in the database (the chain starts at row %d); "+
			"compare a more recent hash", anchor.Seq, v.FirstSeq)
	}
	anchorSeen := anchor != nil && anchor.Seq == v.FirstSeq && v.Rows == 1
	if anchorSeen && anchor.Hash != v.LastHash {
		return fail(anchor.Seq, "changed", "row %d has hash %s, but the kept copy says %s: the trail was rewritten",
			anchor.Seq, short(v.LastHash), short(anchor.Hash))
	}
	for cur != nil {
		if v.Rows > 0 && cur.Seq != v.LastSeq+1 {
			if cur.Seq == v.LastSeq+2 {
				return fail(v.LastSeq+1, "removed", "row %d was removed (seq jumps from %d to %d)", v.LastSeq+1, v.LastSeq, cur.Seq)
			}
			return fail(v.LastSeq+1, "removed", "rows %d to %d were removed (seq jumps from %d to %d)",
				v.LastSeq+1, cur.Seq-1, v.LastSeq, cur.Seq)
		}
		if cur.Hash == "" {
			return fail(cur.Seq, "changed", "row %d changed: its hash was erased", cur.Seq)
		}
		if a, _ := cur.Detail["agent"].(string); a != cur.Agent {
			return fail(cur.Seq, "changed", "row %d changed: its agent column (%q) differs from its detail (%q)", cur.Seq, cur.Agent, a)
		}
		if c, _ := cur.Detail["capability"].(string); c != cur.Capability {
			return fail(cur.Seq, "changed", "row %d changed: its capability column (%q) differs from its detail (%q)",
				cur.Seq, cur.Capability, c)
		}
		h, err := chainHash(prev, cur.canonical())
		if err != nil {
			return fail(cur.Seq, "changed", "row %d changed: %v", cur.Seq, err)
		}
		if h != cur.Hash {
			nxt := next()
			switch {
			case nxt == nil:
				return fail(cur.Seq, "changed", "row %d, the last, was changed or inserted: its hash does not follow from the row before", cur.Seq)
			case hashIs(prev, nxt):
				return fail(cur.Seq, "inserted", "row %d was inserted: the chain runs from row %d straight to the row after it",
					cur.Seq, v.LastSeq)
			case hashIs(cur.Hash, nxt):
				return fail(cur.Seq, "changed", "row %d changed: its content no longer matches its hash "+
					"(or rows just before it were removed and the rest renumbered)", cur.Seq)
			default:
				return fail(cur.Seq, "changed", "row %d changed: its hash does not follow from the row before", cur.Seq)
			}
		}
		if confirmSeq != 0 && cur.Event == AuditPrune && jsonInt(cur.Detail[auditCheckpointSeq]) == confirmSeq &&
			cur.Detail[auditCheckpointHash] == confirmHash {
			confirmSeq = 0
		}
		if anchor != nil && anchor.Seq == cur.Seq {
			anchorSeen = true
			if anchor.Hash != cur.Hash {
				return fail(cur.Seq, "changed", "row %d has hash %s, but the kept copy says %s: the trail was rewritten",
					cur.Seq, short(cur.Hash), short(anchor.Hash))
			}
		}
		prev = cur.Hash
		v.Rows, v.LastSeq, v.LastHash = v.Rows+1, cur.Seq, cur.Hash
		cur = next()
	}
	if _, err := done(); err != nil {
		return v, err
	}
	if confirmSeq != 0 {
		return fail(v.FirstSeq, "removed", "row %d is a checkpoint that no prune row confirms: "+
			"the rows before it were removed outside the prune job", v.FirstSeq)
	}
	if headSeq > v.LastSeq {
		return fail(v.LastSeq+1, "removed", "rows %d to %d were removed from the end (the chain's head is at row %d)",
			v.LastSeq+1, headSeq, headSeq)
	}
	if headSeq == v.LastSeq && headHash != v.LastHash {
		return fail(v.LastSeq, "changed", "row %d changed: the chain's head holds another hash for it", v.LastSeq)
	}
	if anchor != nil && !anchorSeen {
		return fail(anchor.Seq, "removed", "row %d, whose hash was kept, is gone: rows were removed from the end "+
			"(the chain ends at row %d)", anchor.Seq, v.LastSeq)
	}
	v.OK = true
	return v, nil
}

func hashIs(prev string, e *AuditEvent) bool {
	h, err := chainHash(prev, e.canonical())
	return err == nil && h == e.Hash
}

func jsonInt(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}
