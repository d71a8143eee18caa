package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/metnos/gateway/internal/jsonw"
)

// AuditEvent is one append-only audit row. Detail holds names, ids and
// outcomes only: never argument values or secrets.
type AuditEvent struct {
	ID        int64          `json:"-"`   // the row id (internal; seq is the position)
	Seq       int64          `json:"seq"` // position in the chain; 0 until sealed
	At        time.Time      `json:"at"`
	Actor     string         `json:"actor"`
	Event     string         `json:"event"`
	RequestID string         `json:"request_id,omitempty"`
	GrantID   int64          `json:"grant_id,omitempty"`
	Detail    map[string]any `json:"detail,omitempty"`
	Hash      string         `json:"hash,omitempty"`
	// Agent and Capability are copies of Detail's "agent" and "capability",
	// filled in by AppendAudit (from the request or grant the row names when
	// the caller did not say) and kept in indexed columns for the filters.
	Agent      string `json:"-"`
	Capability string `json:"-"`

	at     string // the stored text of At, Detail and GrantID: what the hash covers
	detail string
	grant  string
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
	AuditApproval     = "approval"      // one approver's allow counted towards a quorum
	AuditEscalated    = "escalated"     // a pending request's card went to its route's escalate_to
	AuditNotified     = "notified"      // an allowed request was told to a [[policy.notify]] delivery
	AuditGenesis      = "chain_genesis" // the first row of the hash chain
	// AuditCheckpoint stands where the prune job removed the oldest rows:
	// its hash is the hash of the last row removed, so the chain after it
	// still verifies.
	AuditCheckpoint = "chain_checkpoint"
)

// The audit event names of run-time policy (rules and child tokens).
const (
	AuditRuleAdded    = "rule_added"    // a rule was added at run time
	AuditRuleChanged  = "rule_changed"  // a run-time rule was changed or moved
	AuditRuleRemoved  = "rule_removed"  // a run-time rule was removed
	AuditTokenCreated = "token_created" // an agent made a child token
	AuditTokenRevoked = "token_revoked" // a child token was revoked, with its descendants
)

// The audit event names of the web users' credentials.
const (
	AuditPasskeyAdded   = "passkey_added"   // a web user added a passkey
	AuditPasskeyRemoved = "passkey_removed" // a passkey was removed (by its user, an admin, or a logout)
	AuditSessionsEnded  = "sessions_ended"  // gateway logout ended web sessions
)

// The detail keys of a prune row that confirm the checkpoint it left.
const (
	auditCheckpointSeq  = "audit_checkpoint_seq"
	auditCheckpointHash = "audit_checkpoint_hash"
)

// ErrAuditNeedsTx is returned by AppendAudit given anything but the *DB or
// the Querier of its InTx or GroupTx (a plain *sql.DB, a *sql.Tx begun
// around them): the row must join the chain in the transaction that
// commits it.
var ErrAuditNeedsTx = errors.New("audit: append inside a transaction (DB.InTx, DB.GroupTx) or through *storage.DB")

const insertAudit = `INSERT INTO audit (at, actor, event, request_id, grant_id, detail, agent, capability)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// AppendAudit writes one audit row through q, which is usually the
// transaction of the change being audited (begun by DB.InTx), so the row
// and the change commit together or not at all, and the row joins the hash
// chain at that commit. Given the *DB itself it runs its own transaction.
// It is the one way rows enter the trail.
func AppendAudit(ctx context.Context, q Querier, e AuditEvent) error {
	switch db := q.(type) {
	case *DB:
		return db.InTx(ctx, func(q Querier) error { return AppendAudit(ctx, q, e) })
	case txQuerier:
	default:
		return fmt.Errorf("audit %s: %w", e.Event, ErrAuditNeedsTx)
	}
	rec, err := newAuditRecord(ctx, q, e)
	if err != nil {
		return err
	}
	return rec.append(ctx, q)
}

// AuditRecord is an audit event encoded for the trail (PrepareAudit),
// ready to be appended by a transaction that holds the write lock and
// should spend none of it encoding.
type AuditRecord struct {
	e                 AuditEvent
	detail            []byte
	agent, capability string
}

// PrepareAudit encodes e for AppendPrepared. Unlike AppendAudit it reads
// nothing: the agent and capability columns come from e's fields, its
// Detail, or its actor ("agent:…"), not from the request or grant it names.
func PrepareAudit(e AuditEvent) (AuditRecord, error) {
	return newAuditRecord(context.Background(), nil, e)
}

// PrepareAuditStrings is PrepareAudit for a detail of strings, given as
// key, value pairs in key order, that names the agent and capability
// itself ("agent", "capability"): its JSON (json.Marshal's bytes) is
// written without building a map. e.Detail must be nil.
func PrepareAuditStrings(e AuditEvent, kv ...string) (AuditRecord, error) {
	if e.Detail != nil || len(kv)%2 != 0 {
		return AuditRecord{}, fmt.Errorf("audit %s: PrepareAuditStrings takes key, value pairs and no Detail", e.Event)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	rec := AuditRecord{e: e}
	for i := 0; i < len(kv); i += 2 {
		if i > 0 && kv[i-2] >= kv[i] {
			return AuditRecord{}, fmt.Errorf("audit %s: detail keys out of order at %q", e.Event, kv[i])
		}
		switch kv[i] {
		case "agent":
			rec.agent = kv[i+1]
		case "capability":
			rec.capability = kv[i+1]
		}
	}
	if rec.agent == "" || rec.capability == "" {
		return AuditRecord{}, fmt.Errorf("audit %s: PrepareAuditStrings needs the agent and capability in the detail", e.Event)
	}
	rec.detail = stringObject(kv)
	return rec, nil
}

// AppendPrepared appends rec through q, as AppendAudit does.
func AppendPrepared(ctx context.Context, q Querier, rec AuditRecord) error {
	switch db := q.(type) {
	case *DB:
		return db.InTx(ctx, func(q Querier) error { return rec.append(ctx, q) })
	case txQuerier:
	default:
		return fmt.Errorf("audit %s: %w", rec.e.Event, ErrAuditNeedsTx)
	}
	return rec.append(ctx, q)
}

// newAuditRecord fills in e's agent and capability (reading them through
// q, when not nil, from the grant or request e names) and encodes it.
func newAuditRecord(ctx context.Context, q Querier, e AuditEvent) (AuditRecord, error) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	agent, capability := e.Agent, e.Capability
	if s, ok := e.Detail["agent"].(string); ok && agent == "" {
		agent = s
	}
	if s, ok := e.Detail["capability"].(string); ok && capability == "" {
		capability = s
	}
	requestID := e.RequestID
	if q != nil && (agent == "" || capability == "") && e.GrantID != 0 {
		// A grant's row: the capability, and the agent of the request
		// that wrote the grant (Allow always), if any.
		var c, rid string
		err := q.QueryRowContext(ctx, `SELECT capability, COALESCE(request_id, '') FROM grants WHERE id = $1`,
			e.GrantID).Scan(&c, &rid)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return AuditRecord{}, fmt.Errorf("audit %s: %w", e.Event, err)
		}
		capability, requestID = cmpOr(capability, c), cmpOr(requestID, rid)
	}
	if q != nil && (agent == "" || capability == "") && requestID != "" {
		var a, c string
		err := q.QueryRowContext(ctx, `SELECT agent, capability FROM requests WHERE id = $1`, requestID).Scan(&a, &c)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return AuditRecord{}, fmt.Errorf("audit %s: %w", e.Event, err)
		}
		agent, capability = cmpOr(agent, a), cmpOr(capability, c)
	}
	if agent == "" && strings.HasPrefix(e.Actor, "agent:") {
		agent = strings.TrimPrefix(e.Actor, "agent:")
	}
	if (agent != "" && e.Detail["agent"] != agent) || (capability != "" && e.Detail["capability"] != capability) {
		e.Detail = maps.Clone(e.Detail)
		if e.Detail == nil {
			e.Detail = map[string]any{}
		}
		if agent != "" {
			e.Detail["agent"] = agent
		}
		if capability != "" {
			e.Detail["capability"] = capability
		}
	}
	rec := AuditRecord{e: e, agent: agent, capability: capability}
	if len(e.Detail) > 0 {
		var err error
		if rec.detail, err = marshalDetail(e.Detail); err != nil {
			return AuditRecord{}, fmt.Errorf("audit %s: %w", e.Event, err)
		}
	}
	return rec, nil
}

// marshalDetail is json.Marshal(detail). A detail of strings only (every
// request's outcome row) is written by hand, keys sorted, the same bytes
// json.Marshal writes; the hash covers them, and anything else goes to
// json.Marshal.
func marshalDetail(detail map[string]any) ([]byte, error) {
	var keys [12]string
	if len(detail) > len(keys) {
		return json.Marshal(detail)
	}
	n := 0
	for k, v := range detail {
		if _, ok := v.(string); !ok {
			return json.Marshal(detail)
		}
		keys[n] = k
		n++
	}
	slices.Sort(keys[:n])
	var pairs [2 * len(keys)]string
	for i, k := range keys[:n] {
		pairs[2*i], pairs[2*i+1] = k, detail[k].(string)
	}
	return stringObject(pairs[:2*n]), nil
}

// stringObject is the JSON object of key, value pairs already in key
// order, as json.Marshal writes a map of strings.
func stringObject(kv []string) []byte {
	size := 2
	for _, s := range kv {
		size += len(s) + 3
	}
	b := make([]byte, 0, size+size/8)
	b = append(b, '{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonw.StringHTML(b, kv[i])
		b = append(b, ':')
		b = jsonw.StringHTML(b, kv[i+1])
	}
	return append(b, '}')
}

// append inserts rec through q, the Querier of InTx or GroupTx.
func (rec AuditRecord) append(ctx context.Context, q Querier) error {
	e := rec.e
	if tq, ok := q.(txQuerier); ok && tq.db.Dialect == SQLite {
		// SQLite has one writer, whose transaction holds the database from
		// its BEGIN: the row can join the chain now, in one insert, instead
		// of being inserted and then rewritten by the seal at commit.
		if err := appendChained(ctx, tq, e, rec.detail, rec.agent, rec.capability); err != nil {
			return fmt.Errorf("audit %s: %w", e.Event, err)
		}
		return nil
	}
	if tq, ok := q.(txQuerier); ok && tq.pga != nil {
		// PostgreSQL: inserted at commit, with the transaction's other
		// rows, numbered and hashed (see sealPG).
		tq.pga.add(rec)
		return nil
	}
	_, err := q.ExecContext(ctx, insertAudit, FormatTime(e.At), e.Actor, e.Event,
		nullString(e.RequestID), nullInt(e.GrantID), nullBytes(rec.detail), nullString(rec.agent), nullString(rec.capability))
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Event, err)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// DetailJSON is the row's detail exactly as stored (and hashed).
func (e AuditEvent) DetailJSON() string { return e.detail }

// AtText is the row's time exactly as stored (and hashed).
func (e AuditEvent) AtText() string {
	if e.at == "" && !e.At.IsZero() {
		return FormatTime(e.At)
	}
	return e.at
}

// auditJSON is the export shape of a row: {seq, at, actor, event,
// request_id, grant_id, detail, hash}, with detail as stored, so a
// consumer can recompute the hash from the line.
type auditJSON struct {
	Seq       int64           `json:"seq"`
	At        string          `json:"at"`
	Actor     string          `json:"actor"`
	Event     string          `json:"event"`
	RequestID *string         `json:"request_id"`
	GrantID   *int64          `json:"grant_id"`
	Detail    json.RawMessage `json:"detail"`
	Hash      string          `json:"hash"`
}

// MarshalJSON writes the export shape.
func (e AuditEvent) MarshalJSON() ([]byte, error) {
	j := auditJSON{Seq: e.Seq, At: e.AtText(), Actor: e.Actor, Event: e.Event, Hash: e.Hash, Detail: json.RawMessage("null")}
	if e.RequestID != "" {
		j.RequestID = &e.RequestID
	}
	if e.GrantID != 0 {
		j.GrantID = &e.GrantID
	}
	switch {
	case e.detail != "":
		j.Detail = json.RawMessage(e.detail)
	case len(e.Detail) > 0:
		b, err := json.Marshal(e.Detail)
		if err != nil {
			return nil, err
		}
		j.Detail = b
	}
	return json.Marshal(j)
}

// nullString and nullInt are s and n as arguments of a statement, NULL
// when empty or 0: nil or the value itself, as sql.NullString's Value
// would give, without the Valuer (a sql.NullString put in an argument is
// an allocation, and database/sql's call of its Value is another).
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
