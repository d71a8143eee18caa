package approvals

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/metnos/gateway/internal/jsonw"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/vaglio"
)

// resetCards makes every card of a request due now, to show what changed
// (an approval counted, the request finished or escalated): $1 now, $2
// the request id.
const resetCards = `UPDATE cards SET next_at = $1, attempts = 0 WHERE request_id = $2`

const requestColumns = `id, call_id, agent, status, decision, outcome, reason, blocked_by, vaglio,
capability, target, grant_target, autonomy, channel, sender_id, intent, executor, summary, arg_keys,
trace, notify, callback_url, decided_by, decided_at, created_at, expires_at, grant_id, note, grant_expires_at,
token_id, token_name, quorum, approvers, approvals, rev, escalate_after_ms, escalate_to, escalated_at, remind_every_ms,
scopes, allow_for, session_id, step_up`

const insertRequest = `INSERT INTO requests (id, call_id, agent, status, outcome, reason, blocked_by, vaglio,
capability, target, grant_target, autonomy, channel, sender_id, intent, executor, summary, arg_keys,
trace, notify, callback_url, decided_by, decided_at, created_at, expires_at,
decision, grant_id, note, grant_expires_at, token_id, token_name, quorum, approvers, approvals, rev,
escalate_after_ms, escalate_to, escalated_at, remind_every_ms, escalate_at, remind_at, scopes, allow_for, session_id, step_up)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,$29,$30,$31,
$32,$33,$34,$35,$36,$37,$38,$39,$40,$41,$42,$43,$44,$45)
ON CONFLICT (agent, COALESCE(token_id, ''), call_id) DO NOTHING`

// The statements of this file.
const (
	selectRequest  = `SELECT ` + requestColumns + ` FROM requests WHERE id = $1`
	selectByCallID = `SELECT ` + requestColumns + ` FROM requests
	WHERE agent = $1 AND COALESCE(token_id, '') = $2 AND call_id = $3`
	existsCallID = `SELECT 1 FROM requests WHERE agent = $1 AND COALESCE(token_id, '') = $2 AND call_id = $3`
)

// farFuture marks a card that is in sync with its request: the dispatcher
// never looks at it until a status change sets next_at to now again.
const farFuture = "9999-12-31T23:59:59.000000Z"

// insertRequestShort is insertRequest without the columns that a request
// with no route, grant, token or decision of a person leaves at their
// defaults (the table's DEFAULT or NULL): most requests, and every one
// decided on arrival. Each bound argument cost the group commit's writer,
// which holds the write lock, a copy and a call into SQLite.
const insertRequestShort = `INSERT INTO requests (id, call_id, agent, status, outcome, reason, blocked_by, vaglio,
capability, target, grant_target, autonomy, channel, sender_id, intent, executor, summary, arg_keys,
trace, notify, callback_url, decided_by, decided_at, created_at, expires_at)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25)
ON CONFLICT (agent, COALESCE(token_id, ''), call_id) DO NOTHING`

// requestInsert is a request's INSERT statement and its arguments.
type requestInsert struct {
	query string
	args  []any
}

// requestRow is r as an INSERT into requests, encoded beforehand so that
// the transaction, which holds the write lock, spends none of it encoding.
func requestRow(r Request) requestInsert { return requestRowAs(r, false) }

// requestRowAs is requestRow; full asks for insertRequest even where
// insertRequestShort would do (a test compares the two).
func requestRowAs(r Request, full bool) requestInsert {
	var vj any // NULL when there is no verdict
	switch {
	case r.encoded.vaglio != "":
		vj = r.encoded.vaglio
	case r.Vaglio != nil:
		vj = string(r.Vaglio.AppendJSON(nil))
	}
	var escalateAt, remindAt any
	if r.Status == StatusPending && r.EscalateAfter > 0 {
		escalateAt = storage.FormatTime(r.CreatedAt.Add(r.EscalateAfter))
	}
	if r.Status == StatusPending && r.RemindEvery > 0 {
		remindAt = storage.FormatTime(r.CreatedAt.Add(r.RemindEvery))
	}
	// A request decided on arrival is created, decided and expired at the
	// same instant: formatted (and boxed) once.
	var createdAt any = storage.FormatTime(r.CreatedAt)
	expiresAt, decidedAt := createdAt, any(nil)
	if !r.ExpiresAt.Equal(r.CreatedAt) {
		expiresAt = storage.FormatTime(r.ExpiresAt)
	}
	if r.DecidedAt != nil {
		decidedAt = createdAt
		if !r.DecidedAt.Equal(r.CreatedAt) {
			decidedAt = storage.FormatTime(*r.DecidedAt)
		}
	}
	args := []any{
		r.ID, r.CallID, r.Agent, word(string(r.Status)), word(string(r.Outcome)), r.Reason, nullStr(r.BlockedBy), vj,
		r.Capability, r.Target, r.GrantTarget, word(r.Autonomy.String()), r.Channel, r.SenderID, r.Intent, r.Executor,
		r.Summary, stringList(r.ArgKeys), r.traceText(), stringList(r.Notify),
		r.CallbackURL, word(r.DecidedBy), decidedAt, createdAt, expiresAt,
	}
	if r.Decision == nil && r.GrantID == nil && r.Note == "" && r.GrantExpiresAt == nil && r.TokenID == "" &&
		r.TokenName == "" && r.Quorum <= 1 && len(r.Approvers) == 0 && len(r.Approvals) == 0 && r.Rev == 0 &&
		r.EscalateAfter.Milliseconds() == 0 && len(r.EscalateTo) == 0 && r.EscalatedAt == nil &&
		r.RemindEvery.Milliseconds() == 0 && escalateAt == nil && remindAt == nil && len(r.Scopes) == 0 &&
		len(r.AllowFor) == 0 && r.SessionID == "" && r.StepUp == "" && !full {
		return requestInsert{insertRequestShort, args}
	}
	return requestInsert{insertRequest, append(args,
		nullDecision(r.Decision), nullInt(r.GrantID), r.Note, nullTime(r.GrantExpiresAt),
		sql.NullString{String: r.TokenID, Valid: r.TokenID != ""}, r.TokenName,
		max(r.Quorum, 1), stringList(r.Approvers), jsonList(r.Approvals), r.Rev, r.EscalateAfter.Milliseconds(),
		stringList(r.EscalateTo), nullTime(r.EscalatedAt), r.RemindEvery.Milliseconds(), escalateAt, remindAt,
		stringList(r.Scopes), stringList(r.AllowFor), r.SessionID, r.StepUp,
	)}
}

// word is s as a row's argument, without an allocation when it is one of
// the fixed words of a status, an outcome, an autonomy level or a policy
// decision (a constant boxes for free; any other string is copied to the
// heap).
func word(s string) any {
	switch s {
	case string(StatusPending):
		return string(StatusPending)
	case string(StatusAllowed): // also policy.Allowed
		return string(StatusAllowed)
	case string(StatusDenied): // also policy.Denied
		return string(StatusDenied)
	case string(policy.ApprovalRequired):
		return string(policy.ApprovalRequired)
	case "ReadOnly":
		return "ReadOnly"
	case "Supervised":
		return "Supervised"
	case "Full":
		return "Full"
	case "policy":
		return "policy"
	}
	return s
}

// insertRequestRow inserts a requestRow; false when the agent's call_id
// is taken.
func insertRequestRow(ctx context.Context, q storage.Querier, row requestInsert) (bool, error) {
	res, err := q.ExecContext(ctx, row.query, row.args...)
	if err != nil {
		return false, fmt.Errorf("insert request: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// jsonList is the stored JSON array of s: "[]" when empty (never "null").
func jsonList[T any](s []T) string {
	if len(s) == 0 {
		return "[]"
	}
	return jsonText(s)
}

// encodedJSON is a request's trace and vaglio verdict as JSON, encoded
// once for its row and its answer ("" when not encoded; vaglio is also ""
// when there is no verdict).
type encodedJSON struct{ trace, vaglio string }

// encodeJSON encodes r's trace and verdict into one string (one
// allocation for both, which the row's arguments and the answer share),
// through a buffer kept for the next request.
func encodeJSON(r *Request) encodedJSON {
	bp := encodeBufs.Get().(*[]byte)
	b := policy.AppendTraceJSON((*bp)[:0], r.Trace)
	t := len(b)
	if r.Vaglio != nil {
		b = r.Vaglio.AppendJSON(b)
	}
	s := string(b)
	if cap(b) <= 16<<10 {
		*bp = b
		encodeBufs.Put(bp)
	}
	return encodedJSON{trace: s[:t], vaglio: s[t:]}
}

// encodeBufs are encodeJSON's buffers: a decided-now request's trace and
// verdict are about 600 bytes, which a buffer of their own per request
// doubled in the heap.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// traceText is r's trace as the row stores it.
func (r *Request) traceText() string {
	if r.encoded.trace != "" {
		return r.encoded.trace
	}
	return string(policy.AppendTraceJSON(nil, r.Trace))
}

// stringList is jsonList for strings, without reflection.
func stringList(s []string) string {
	if len(s) == 0 {
		return "[]"
	}
	return string(jsonw.Strings(nil, s))
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func getRequest(ctx context.Context, q storage.Querier, id string) (Request, error) {
	r, err := scanRequest(q.QueryRowContext(ctx, selectRequest, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, fmt.Errorf("request %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Request{}, fmt.Errorf("request %s: %w", id, err)
	}
	return r, nil
}

func getByCallID(ctx context.Context, q storage.Querier, agent, tokenID, callID string) (Request, error) {
	r, err := scanRequest(q.QueryRowContext(ctx, selectByCallID, agent, tokenID, callID))
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, ErrNotFound
	}
	return r, err
}

// callIDTaken says whether agent, with child token tokenID ("" for its
// own token), has a request under callID. A call_id is scoped to the token
// that sent it: a child never reaches its parent's or a sibling's request.
func callIDTaken(ctx context.Context, q storage.Querier, agent, tokenID, callID string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, existsCallID,
		agent, tokenID, callID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRequest(sc rowScanner) (Request, error) {
	var r Request
	var status, outcome, autonomy, keys, trace, notify, created, expires string
	var decision, blockedBy, vj, decidedAt, grantExpires, tokenID, escalatedAt sql.NullString
	var grantID sql.NullInt64
	var approvers, approvals, escalateTo, scopes, allowFor string
	var escalateMS, remindMS int64
	err := sc.Scan(&r.ID, &r.CallID, &r.Agent, &status, &decision, &outcome, &r.Reason, &blockedBy, &vj,
		&r.Capability, &r.Target, &r.GrantTarget, &autonomy, &r.Channel, &r.SenderID, &r.Intent, &r.Executor,
		&r.Summary, &keys, &trace, &notify, &r.CallbackURL, &r.DecidedBy, &decidedAt, &created, &expires,
		&grantID, &r.Note, &grantExpires, &tokenID, &r.TokenName,
		&r.Quorum, &approvers, &approvals, &r.Rev, &escalateMS, &escalateTo, &escalatedAt, &remindMS,
		&scopes, &allowFor, &r.SessionID, &r.StepUp)
	if err != nil {
		return Request{}, err
	}
	_ = json.Unmarshal([]byte(approvers), &r.Approvers)
	_ = json.Unmarshal([]byte(approvals), &r.Approvals)
	r.Approvals = nonNilApprovals(r.Approvals)
	_ = json.Unmarshal([]byte(escalateTo), &r.EscalateTo)
	_ = json.Unmarshal([]byte(scopes), &r.Scopes)
	_ = json.Unmarshal([]byte(allowFor), &r.AllowFor)
	r.EscalateAfter = time.Duration(escalateMS) * time.Millisecond
	r.RemindEvery = time.Duration(remindMS) * time.Millisecond
	if escalatedAt.Valid {
		t, _ := storage.ParseTime(escalatedAt.String)
		r.EscalatedAt = &t
	}
	r.Status, r.Outcome = Status(status), policy.Outcome(outcome)
	r.TokenID = tokenID.String
	if decision.Valid {
		d := Decision(decision.String)
		r.Decision = &d
	}
	if blockedBy.Valid {
		r.BlockedBy = &blockedBy.String
	}
	if vj.Valid {
		r.Vaglio = new(vaglio.Verdict)
		_ = json.Unmarshal([]byte(vj.String), r.Vaglio)
	}
	r.Autonomy, _ = policy.ParseLevel(autonomy)
	_ = json.Unmarshal([]byte(keys), &r.ArgKeys)
	_ = json.Unmarshal([]byte(trace), &r.Trace)
	_ = json.Unmarshal([]byte(notify), &r.Notify)
	if decidedAt.Valid {
		t, _ := storage.ParseTime(decidedAt.String)
		r.DecidedAt = &t
	}
	r.CreatedAt, _ = storage.ParseTime(created)
	r.ExpiresAt, _ = storage.ParseTime(expires)
	if grantID.Valid {
		r.GrantID = &grantID.Int64
	}
	if grantExpires.Valid {
		t, _ := storage.ParseTime(grantExpires.String)
		r.GrantExpiresAt = &t
	}
	if c, err := policy.Lookup(r.Capability); err == nil {
		r.Critical = c.Critical
	}
	return r, nil
}

func listRequests(ctx context.Context, q storage.Querier, query string, args ...any) ([]Request, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Request{}
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nullStr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

func nullDecision(d *Decision) any {
	if d == nil {
		return nil
	}
	return string(*d)
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return storage.FormatTime(*t)
}

func nullInt(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

func nonNilApprovals(a []Approval) []Approval {
	if a == nil {
		return []Approval{}
	}
	return a
}
