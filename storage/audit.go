package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEvent is one append-only audit row. Detail holds names, ids and
// outcomes only: never argument values or secrets.
type AuditEvent struct {
	ID        int64          `json:"id"`
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	Event     string         `json:"event"`
	RequestID string         `json:"request_id,omitempty"`
	GrantID   int64          `json:"grant_id,omitempty"`
	Detail    map[string]any `json:"detail,omitempty"`
}

// The audit event names.
const (
	AuditOutcome      = "outcome"       // policy answered a request on arrival
	AuditRateLimited  = "rate_limited"  // a request refused by the rate limit
	AuditDecision     = "decision"      // a person or the admin API decided
	AuditExpired      = "expired"       // a request timed out
	AuditCancelled    = "cancelled"     // the agent withdrew a request
	AuditGrantWritten = "grant_written" // a grant was created
	AuditGrantRevoked = "grant_revoked" // a grant was revoked (by a person or as stale)
	AuditPrune        = "prune"         // one pass of the prune job
	AuditNote         = "note"          // the owner attached a note to a request
)

// The audit event names of run-time policy (rules and child tokens).
const (
	AuditRuleAdded    = "rule_added"    // a rule was added at run time
	AuditRuleChanged  = "rule_changed"  // a run-time rule was changed or moved
	AuditRuleRemoved  = "rule_removed"  // a run-time rule was removed
	AuditTokenCreated = "token_created" // an agent made a child token
	AuditTokenRevoked = "token_revoked" // a child token was revoked, with its descendants
)

const insertAudit = `INSERT INTO audit (at, actor, event, request_id, grant_id, detail)
VALUES ($1, $2, $3, $4, $5, $6)`

// AppendAudit writes one audit row through q, which is usually the
// transaction of the change being audited, so the row and the change commit
// together or not at all.
func AppendAudit(ctx context.Context, q Querier, e AuditEvent) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	var detail []byte
	if len(e.Detail) > 0 {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return fmt.Errorf("audit %s: %w", e.Event, err)
		}
	}
	_, err := q.ExecContext(ctx, insertAudit, FormatTime(e.At), e.Actor, e.Event,
		nullString(e.RequestID), nullInt(e.GrantID), nullBytes(detail))
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Event, err)
	}
	return nil
}

const selectAudit = `SELECT id, at, actor, event, COALESCE(request_id, ''), COALESCE(grant_id, 0), COALESCE(detail, '')
FROM audit WHERE ($1 = '' OR request_id = $1) ORDER BY id DESC LIMIT $2`

// ListAudit returns the newest audit rows first, for one request or all.
func ListAudit(ctx context.Context, q Querier, requestID string, limit int) ([]AuditEvent, error) {
	rows, err := q.QueryContext(ctx, selectAudit, requestID, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var at, detail string
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Event, &e.RequestID, &e.GrantID, &detail); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		e.At, _ = ParseTime(at)
		if detail != "" {
			_ = json.Unmarshal([]byte(detail), &e.Detail)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
func nullInt(n int64) sql.NullInt64      { return sql.NullInt64{Int64: n, Valid: n != 0} }
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
