package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/internal/jsonw"
)

// The audit trail is a hash chain. Every row has a position, seq (1, 2, 3 …
// with no gap), and
//
//	hash = hex(sha256(previous row's hash as 32 bytes ‖ canonical encoding of this row))
//
// where the canonical encoding is the netstrings ("<length>:<bytes>,") of
// at, actor, event, request_id, grant_id (decimal, "" when none) and detail
// (the stored JSON text, "" when none), as they are stored and as
// `gateway audit --format jsonl` prints them, so anyone can recompute the
// chain from an export. The first row of the chain is a genesis row
// (previous hash: 32 zero bytes) or, once the prune job has removed older
// rows, a checkpoint row that holds the hash of the last removed row.
//
// Appends from every transaction, process and replica join one chain: a
// row is inserted without seq and hash, and the transaction seals its rows
// just before it commits (DB.InTx): it locks the chain's head row
// (audit_chain, FOR UPDATE on PostgreSQL; SQLite admits one writer
// anyway), numbers and hashes its rows after the head and moves the head.
// Taking the head last, after every other lock of the transaction, means
// it cannot deadlock against a transaction that waits for a row this one
// holds; holding it until commit means rows commit in seq order, so a
// reader that polls seq > last never skips one.
//
// On SQLite, whose one writer holds the whole database from BEGIN, a row
// appended through DB.Tx is numbered and hashed at once instead (one
// insert, no rewrite at commit): the same chain, at half the cost.

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
	_, err := q.ExecContext(ctx, insertAudit, FormatTime(e.At), e.Actor, e.Event,
		nullString(e.RequestID), nullInt(e.GrantID), nullBytes(rec.detail), nullString(rec.agent), nullString(rec.capability))
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Event, err)
	}
	return nil
}

const insertAuditChained = `INSERT INTO audit (at, actor, event, request_id, grant_id, detail, agent, capability, seq, hash)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// appendChained inserts a row already numbered and hashed after the
// chain's head, and moves the head: what sealAudit does at commit, done at
// once where no other writer can come between (SQLite). Within a
// transaction begun by InTx or GroupTx the head is read once and written
// back once, by sealAudit (see chainCursor); elsewhere it is read and
// written on every row.
func appendChained(ctx context.Context, q txQuerier, e AuditEvent, detail []byte, agent, capability string) error {
	c := q.db.cursor.Load()
	if c == nil || c.tx != q.tx {
		c = &chainCursor{tx: q.tx} // this row's alone: written back below
	}
	if !c.loaded {
		seq, prev, err := q.db.lockHead(ctx, q)
		if err != nil {
			return err
		}
		c.seq, c.hash, c.loaded = seq, prev, true
	}
	at := FormatTime(e.At)
	grant := ""
	if e.GrantID != 0 {
		grant = strconv.FormatInt(e.GrantID, 10)
	}
	hash, err := chainHash(c.hash, canonical(at, e.Actor, e.Event, e.RequestID, grant, string(detail)))
	if err != nil {
		return err
	}
	seq := c.seq + 1
	if _, err := q.ExecContext(ctx, insertAuditChained, at, e.Actor, e.Event, nullString(e.RequestID), nullInt(e.GrantID),
		nullBytes(detail), nullString(agent), nullString(capability), seq, hash); err != nil {
		return err
	}
	c.seq, c.hash, c.dirty = seq, hash, true
	if q.db.cursor.Load() != c {
		return c.flush(ctx, q)
	}
	return nil
}

// chainCursor is the audit chain's head as the open SQLite write
// transaction tx has moved it. The rows appended in tx are numbered and
// hashed at once (appendChained), but the head row (audit_chain) is read at
// the first of them and written back once, when sealAudit runs just before
// the commit: two statements per transaction instead of two per row. It
// lives in DB.cursor while InTx or GroupTx hold the write slot; a savepoint
// rolled back restores the copy taken when it began.
type chainCursor struct {
	tx     *sql.Tx
	loaded bool // seq and hash are the head's (read from its row, or known: see groupHead)
	dirty  bool // seq and hash moved since
	seq    int64
	hash   string
	// clean says no committed row is left unsealed: the last commit was
	// the group writer's own, whose seal left none (see groupHead).
	clean bool
	// others says sealAudit sealed rows appended outside the cursor, and
	// moved the head past it.
	others bool
	// stmts are the cached statements bound to tx (see txQuerier.bound).
	stmts map[*sql.Stmt]*sql.Stmt
}

// groupHead carries the chain's head from one group commit to the next.
// When the WAL-index header at the next group's BEGIN is still the one
// the last group's COMMIT left (no commit of anyone came between, see
// owncommits.go), the head row holds what the cursor held at that commit,
// and no row is unsealed: the group neither reads the head row nor looks
// for unsealed rows. Any other commit changes the header, and the group
// reads both again.
type groupHead struct {
	ok    bool
	after walHeader
	seq   int64
	hash  string
}

// resume loads c from h if the header is still the one h was taken at.
func (h *groupHead) resume(db *DB, c *chainCursor) {
	if !h.ok || c == nil {
		return
	}
	h.ok = false
	if now, ok := db.headerNow(); ok && now == h.after {
		c.seq, c.hash, c.loaded, c.clean = h.seq, h.hash, true, true
	}
}

// keep records the head c left, after the group's commit moved the header
// from before to after and was the only commit in between.
func (h *groupHead) keep(c *chainCursor, before, after walHeader) {
	if c != nil && c.loaded && !c.others && after[walChange] == before[walChange]+1 {
		*h = groupHead{ok: true, after: after, seq: c.seq, hash: c.hash}
	}
}

// flush writes the cursor back to the head row, when it moved.
func (c *chainCursor) flush(ctx context.Context, q Querier) error {
	if !c.dirty {
		return nil
	}
	if _, err := q.ExecContext(ctx, moveHead, c.seq, c.hash); err != nil {
		return err
	}
	c.dirty = false
	return nil
}

// openCursor starts the chain cursor of tx, a SQLite write transaction of
// InTx or GroupTx (which hold the write slot); the returned function ends
// it, whether tx committed or not.
func (db *DB) openCursor(tx *sql.Tx) (c *chainCursor, end func()) {
	if db.writeLock == nil {
		return nil, func() {}
	}
	c = &chainCursor{tx: tx}
	db.cursor.Store(c)
	return c, func() { db.cursor.CompareAndSwap(c, nil) }
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// canonical is the encoding of a row the hash covers (see the top of this
// file): netstrings of the stored texts.
func canonical(at, actor, event, requestID, grantID, detail string) []byte {
	fields := [...]string{at, actor, event, requestID, grantID, detail}
	n := 0
	for _, f := range fields {
		n += len(f) + 12 // its length in digits (at most 10), ':' and ','
	}
	b := make([]byte, 0, n)
	for _, f := range fields {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
		b = append(b, ',')
	}
	return b
}

// chainHash is the hash of a row whose predecessor's hash is prev ("" for
// the genesis row: 32 zero bytes).
func chainHash(prev string, canon []byte) (string, error) {
	p := make([]byte, sha256.Size)
	if prev != "" {
		b, err := hex.DecodeString(prev)
		if err != nil || len(b) != sha256.Size {
			return "", fmt.Errorf("audit chain: malformed hash %q", prev)
		}
		p = b
	}
	h := sha256.New()
	h.Write(p)
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (e *AuditEvent) canonical() []byte {
	return canonical(e.at, e.Actor, e.Event, e.RequestID, e.grant, e.detail)
}

const (
	selectUnsealed = `SELECT id, at, actor, event, COALESCE(request_id, ''), grant_id, COALESCE(detail, '')
FROM audit WHERE seq IS NULL ORDER BY id`
	selectHead       = `SELECT seq, hash FROM audit_chain WHERE id = 1`
	sealRow          = `UPDATE audit SET seq = $1, hash = $2 WHERE id = $3`
	moveHead         = `UPDATE audit_chain SET seq = $1, hash = $2 WHERE id = 1`
	selectHeadLocked = selectHead + ` FOR UPDATE`
)

// lockHead reads the chain's head, locking it until tx ends on PostgreSQL
// (SQLite's write transaction holds the whole database already).
func (db *DB) lockHead(ctx context.Context, q Querier) (seq int64, hash string, err error) {
	query := selectHead
	if db.Dialect == Postgres {
		query = selectHeadLocked
	}
	err = q.QueryRowContext(ctx, query).Scan(&seq, &hash)
	return seq, hash, err
}

// sealAudit numbers and hashes the rows appended in tx (and any committed
// row left unsealed), after the chain's head. DB.InTx calls it just before
// every commit.
func (db *DB) sealAudit(ctx context.Context, tx *sql.Tx) error {
	q := db.tx(tx)
	c := db.cursor.Load()
	if c != nil && c.tx == tx {
		// The rows appended in tx are sealed already; move the head past
		// them first, so the rows sealed below follow them.
		if err := c.flush(ctx, q); err != nil {
			return fmt.Errorf("audit chain head: %w", err)
		}
		if c.clean {
			return nil // and no committed row is unsealed (see groupHead)
		}
	}
	pending, err := scanUnsealed(ctx, q)
	if err != nil || len(pending) == 0 {
		return err
	}
	if c != nil && c.tx == tx {
		c.others = true
	}
	seq, prev, err := db.lockHead(ctx, q)
	if err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	if db.Dialect == Postgres {
		// Read again under the lock: another replica may have sealed a
		// committed row we saw unsealed.
		if pending, err = scanUnsealed(ctx, q); err != nil {
			return err
		}
	}
	for i := range pending {
		e := &pending[i]
		seq++
		if prev, err = chainHash(prev, e.canonical()); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, sealRow, seq, prev, e.ID); err != nil {
			return fmt.Errorf("seal audit row: %w", err)
		}
	}
	if _, err := q.ExecContext(ctx, moveHead, seq, prev); err != nil {
		return fmt.Errorf("audit chain head: %w", err)
	}
	return nil
}

func scanUnsealed(ctx context.Context, q Querier) ([]AuditEvent, error) {
	rows, err := q.QueryContext(ctx, selectUnsealed)
	if err != nil {
		return nil, fmt.Errorf("seal audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var e AuditEvent
		var grant sql.NullInt64
		if err := rows.Scan(&e.ID, &e.at, &e.Actor, &e.Event, &e.RequestID, &grant, &e.detail); err != nil {
			return nil, fmt.Errorf("seal audit: %w", err)
		}
		if grant.Valid {
			e.grant = strconv.FormatInt(grant.Int64, 10)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ensureGenesis starts the chain with its genesis row when nothing was ever
// sealed: on a new database and on one migrated from before the chain
// (whose older rows it counts as legacy_rows).
func (db *DB) ensureGenesis(ctx context.Context) error {
	return db.InTx(ctx, func(q Querier) error {
		seq, hash, err := db.lockHead(ctx, q)
		if err != nil {
			return err
		}
		if hash != "" {
			return nil
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE seq IS NOT NULL AND hash IS NULL`).Scan(&n); err != nil {
			return err
		}
		detail := map[string]any{"schema": SchemaVersion()}
		if n > 0 {
			detail["legacy_rows"] = n
			detail["legacy_last_seq"] = seq
		}
		return AppendAudit(ctx, q, AuditEvent{Actor: "gateway", Event: AuditGenesis, Detail: detail})
	})
}

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
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("query audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("query audit: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
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

// ListAudit returns the newest audit rows first, for one request or all,
// leaving out the chain's own genesis and checkpoint rows.
func ListAudit(ctx context.Context, q Querier, requestID string, limit int) ([]AuditEvent, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit
WHERE ($1 = '' OR request_id = $1) AND event NOT IN ($3, $4) ORDER BY COALESCE(seq, id) DESC LIMIT $2`,
		requestID, limit, AuditGenesis, AuditCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// AuditPruned says what PruneAudit removed.
type AuditPruned struct {
	Removed        int    // rows deleted (chained and legacy)
	CheckpointSeq  int64  // the checkpoint's seq: the last chained row removed (0: none)
	CheckpointHash string // its hash
}

// Detail is what the prune row records, so verify can confirm that the
// checkpoint at the head of the chain was left by the prune job.
func (p AuditPruned) Detail() map[string]any {
	d := map[string]any{"audit_deleted": p.Removed}
	if p.CheckpointSeq != 0 {
		d[auditCheckpointSeq] = p.CheckpointSeq
		d[auditCheckpointHash] = p.CheckpointHash
	}
	return d
}

// PruneAudit removes, inside the caller's transaction, the oldest audit
// rows written before before, and leaves a checkpoint row in place of the
// last chained one it removed, holding that row's hash: the rows after it
// still verify. The caller appends its prune row with p.Detail() in the
// same transaction; verify requires it. dry only counts.
func PruneAudit(ctx context.Context, q Querier, before time.Time, dry bool) (AuditPruned, error) {
	var p AuditPruned
	b := FormatTime(before)
	// Rows from before the chain existed (no hash, below the first hashed row).
	const legacy = `FROM audit WHERE seq IS NOT NULL AND hash IS NULL AND at < $1
AND seq < (SELECT COALESCE(MIN(seq), 0) FROM audit WHERE hash IS NOT NULL)`
	var nLegacy int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) `+legacy, b).Scan(&nLegacy); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	// Chained rows: the longest run from the start that is all older.
	var k sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT MAX(seq) FROM audit WHERE hash IS NOT NULL AND seq < COALESCE(
(SELECT MIN(seq) FROM audit WHERE hash IS NOT NULL AND at >= $1), (SELECT MAX(seq) FROM audit) + 1)`, b).Scan(&k)
	if err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	var first int64
	var kAt, kHash, kEvent string
	nChained := 0
	if k.Valid {
		if err := q.QueryRowContext(ctx, `SELECT at, hash, event FROM audit WHERE seq = $1`, k.Int64).Scan(&kAt, &kHash, &kEvent); err != nil {
			return p, fmt.Errorf("prune audit: %w", err)
		}
		if err := q.QueryRowContext(ctx, `SELECT MIN(seq), COUNT(*) FROM audit WHERE hash IS NOT NULL AND seq <= $1`,
			k.Int64).Scan(&first, &nChained); err != nil {
			return p, fmt.Errorf("prune audit: %w", err)
		}
		if k.Int64 == first && kEvent == AuditCheckpoint {
			k.Valid, nChained = false, 0 // only the checkpoint is old: nothing to do
		}
	}
	p.Removed = nLegacy + nChained
	if k.Valid {
		p.CheckpointSeq, p.CheckpointHash = k.Int64, kHash
	}
	if dry || p.Removed == 0 {
		return p, nil
	}
	if _, err := q.ExecContext(ctx, `DELETE `+legacy, b); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	if !k.Valid {
		return p, nil
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM audit WHERE seq <= $1`, k.Int64); err != nil {
		return p, fmt.Errorf("prune audit: %w", err)
	}
	detail, _ := json.Marshal(map[string]any{"removed_through": k.Int64, "removed": nChained})
	// The checkpoint keeps the removed row's time, so the next pass, which
	// removes a run of old rows from the start, takes it along.
	if _, err := q.ExecContext(ctx, `INSERT INTO audit (seq, at, actor, event, detail, hash) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.Int64, kAt, "prune", AuditCheckpoint, string(detail), kHash); err != nil {
		return p, fmt.Errorf("prune audit: checkpoint: %w", err)
	}
	return p, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
func nullInt(n int64) sql.NullInt64      { return sql.NullInt64{Int64: n, Valid: n != 0} }
func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
