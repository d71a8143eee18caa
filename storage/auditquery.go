package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/internal/duration"
)

// AuditFilter selects audit rows. Empty fields select everything.
type AuditFilter struct {
	Since, Until time.Time // at >= Since, at < Until
	Agent        string    // the agent the row concerns (its request's agent, or the acting agent)
	RequestID    string
	Event        string
	Actor        string // a part of the actor: "U0123" matches "slack:Roberto (U0123)"
	Capability   string
	After        int64 // seq > After
	Limit        int   // at most this many (0: no limit)
	// Newest selects the last Limit rows instead of the first (still
	// returned oldest first): "the last 20".
	Newest bool
}

const auditColumns = `id, COALESCE(seq, 0), at, actor, event, COALESCE(request_id, ''), grant_id,
COALESCE(detail, ''), COALESCE(hash, ''), COALESCE(agent, ''), COALESCE(capability, '')`

// auditQuery is the query of f in dialect d and its arguments. Only the
// filters f sets are written into it, so that the planner can use an
// index for them: audit_request for one request, audit_agent (agent, seq)
// for one agent, audit_seq for the rest, which walk the chain in order.
func auditQuery(d Dialect, f AuditFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.After}
	b.WriteString(`SELECT ` + auditColumns + ` FROM audit WHERE seq IS NOT NULL AND seq > $1`)
	where := func(cond string, arg any) {
		args = append(args, arg)
		b.WriteString(" AND ")
		b.WriteString(strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if !f.Since.IsZero() {
		where("at >= ?", FormatTime(f.Since))
	}
	if !f.Until.IsZero() {
		where("at < ?", FormatTime(f.Until))
	}
	if f.Agent != "" {
		where("agent = ?", f.Agent)
	}
	if f.RequestID != "" {
		where("request_id = ?", f.RequestID)
	}
	if f.Event != "" {
		where("event = ?", f.Event)
	}
	if f.Actor != "" {
		if d == Postgres {
			where("strpos(actor, ?) > 0", f.Actor)
		} else {
			where("instr(actor, ?) > 0", f.Actor)
		}
	}
	if f.Capability != "" {
		where("capability = ?", f.Capability)
	}
	if f.Newest {
		b.WriteString(" ORDER BY seq DESC")
	} else {
		b.WriteString(" ORDER BY seq ASC")
	}
	if f.Limit > 0 {
		args = append(args, int64(f.Limit))
		b.WriteString(" LIMIT $" + strconv.Itoa(len(args)))
	}
	return b.String(), args
}

// QueryAudit returns the audit rows f selects, oldest first.
func (db *DB) QueryAudit(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	query, args := auditQuery(db.Dialect, f)
	out, err := auditRows(db.QueryContext(ctx, query, args...))
	if err != nil {
		return nil, fmt.Errorf("query audit: %w", err)
	}
	if f.Newest {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}

func scanAudit(sc interface{ Scan(...any) error }) (AuditEvent, error) {
	var e AuditEvent
	var grant sql.NullInt64
	if err := sc.Scan(&e.ID, &e.Seq, &e.at, &e.Actor, &e.Event, &e.RequestID, &grant, &e.detail, &e.Hash,
		&e.Agent, &e.Capability); err != nil {
		return AuditEvent{}, err
	}
	if grant.Valid {
		e.GrantID = grant.Int64
		e.grant = strconv.FormatInt(grant.Int64, 10)
	}
	e.At, _ = ParseTime(e.at)
	if e.detail != "" {
		_ = json.Unmarshal([]byte(e.detail), &e.Detail)
	}
	return e, nil
}

// ParseAuditTime reads a --since / --until value (and the API's since and
// until): a duration back from now ("24h"), an RFC 3339 time, or a date
// (UTC midnight). Empty is the zero time: no bound.
func ParseAuditTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := duration.Parse(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a negative duration", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (24h) nor a time (RFC 3339 or 2006-01-02)", s)
}

// AuditHead returns the seq of the last row of the chain.
func (db *DB) AuditHead(ctx context.Context) (int64, error) {
	var seq int64
	var hash string
	if err := db.QueryRowContext(ctx, selectHead).Scan(&seq, &hash); err != nil {
		return 0, fmt.Errorf("audit chain head: %w", err)
	}
	return seq, nil
}

// ListAudit returns the newest audit rows first, for one request or all,
// leaving out the chain's own genesis and checkpoint rows.
func ListAudit(ctx context.Context, q Querier, requestID string, limit int) ([]AuditEvent, error) {
	out, err := auditRows(q.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit
WHERE ($1 = '' OR request_id = $1) AND event NOT IN ($3, $4) ORDER BY COALESCE(seq, id) DESC LIMIT $2`,
		requestID, limit, AuditGenesis, AuditCheckpoint))
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}

// auditRows reads every row of a query of auditColumns, and closes it.
func auditRows(rows *sql.Rows, err error) ([]AuditEvent, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
