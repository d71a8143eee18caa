package policy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/metnos/gateway/storage"
)

const insertGrant = `INSERT INTO grants
(channel, sender_id, capability, target, anchor, granted_at, expires_at, granted_by, request_id, agent, session_id, route)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`

const grantColumns = `id, channel, sender_id, capability, target, granted_at, expires_at, granted_by,
last_used_at, revoked_at, revoke_reason, COALESCE(request_id, ''), agent, session_id, uses, route`

// findCandidates uses grants_lookup: one indexed probe per anchor. The
// INDEXED BY is needed: without statistics SQLite prefers grants_principal
// for the ORDER BY id and reads every grant of the principal (milliseconds
// for a principal with a thousand grants instead of microseconds).
const findCandidates = `SELECT ` + grantColumns + ` FROM grants INDEXED BY grants_lookup
WHERE channel = $1 AND sender_id = $2 AND capability = $3 AND revoked_at IS NULL
AND (expires_at IS NULL OR expires_at > $4) AND anchor IN (SELECT value FROM json_each($5))
ORDER BY id`

// findCandidatesPG is findCandidates on PostgreSQL: the anchors are a text
// array, and the planner picks grants_lookup by itself (it has statistics).
const findCandidatesPG = `SELECT ` + grantColumns + ` FROM grants
WHERE channel = $1 AND sender_id = $2 AND capability = $3 AND revoked_at IS NULL
AND (expires_at IS NULL OR expires_at > $4) AND anchor = ANY($5)
ORDER BY id`

const touchGrant = `UPDATE grants SET last_used_at = $1 WHERE id = $2 AND revoked_at IS NULL`

const listGrants = `SELECT ` + grantColumns + ` FROM grants
WHERE ($1 = '' OR channel = $1) AND ($2 = '' OR sender_id = $2)
AND ($3 OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $4)))
AND ($6 = '' OR agent = '' OR agent = $6)
ORDER BY id DESC LIMIT $5`

const revokeGrant = `UPDATE grants SET revoked_at = $1, revoke_reason = $2 WHERE id = $3 AND revoked_at IS NULL`

// The statements of this file.
const (
	countActiveGrants = `SELECT COUNT(*) FROM grants WHERE revoked_at IS NULL
	AND (expires_at IS NULL OR expires_at > $1)`
	getGrant = `SELECT ` + grantColumns + ` FROM grants WHERE id = $1`
)

// Errors of the grants store.
var (
	// ErrGrantNotAllowed: the capability needs a person every time
	// (default_approval always), so no grant may ever be written for it.
	ErrGrantNotAllowed = errors.New("grants are never written for this capability")
	// ErrNotFound: no grant with that id.
	ErrNotFound = errors.New("not found")
)

// Principal is the person an agent acts for: the key of a grant.
type Principal struct {
	Channel  string `json:"channel"`
	SenderID string `json:"sender_id"`
}

// Grant is one row of the grants store. Active is computed at read time.
type Grant struct {
	ID         int64      `json:"id"`
	Channel    string     `json:"channel"`
	SenderID   string     `json:"sender_id"`
	Capability string     `json:"capability"`
	Target     string     `json:"target"`
	GrantedAt  time.Time  `json:"granted_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	GrantedBy  string     `json:"granted_by"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// Uses counts the decisions the grant allowed, added up from the
	// audit chain a few seconds after them (approvals.CountGrantUses).
	Uses         int64      `json:"uses"`
	RevokedAt    *time.Time `json:"revoked_at"`
	RevokeReason *string    `json:"revoke_reason"`
	Active       bool       `json:"active"`
	// Agent, when set, is the agent the grant was asked for: it matches
	// only that agent's requests ("" = every agent of the principal, what
	// an admin adds through the grants API). SessionID is set on a session
	// grant (Allow this session), with its Agent: it matches only that
	// agent's requests in that session.
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	// Route is the guarded route whose decision wrote the grant (its
	// Guard.Key), "" for every other grant: only such a grant lifts that
	// route's requests.
	Route     string `json:"route,omitempty"`
	RequestID string `json:"-"`
}

// Session is where a request comes from, for the grants that are not the
// whole principal's: its agent, the agent's session, and the guarded route
// it is on (Guard.Key, "" for none). The zero Session matches only grants
// of the whole principal.
type Session struct {
	Agent string
	ID    string
	Route string
}

// covers reports whether g may decide a request of s: a grant of another
// agent never does, a session grant only in its own session, and on a
// guarded route only a grant that route's decision wrote.
func (g *Grant) covers(s Session) bool {
	if g.Agent != "" && g.Agent != s.Agent {
		return false
	}
	if g.SessionID != "" && (s.ID == "" || g.SessionID != s.ID) {
		return false
	}
	return s.Route == "" || g.Route == s.Route
}

// NewGrant is what Record writes. TTL 0 means no expiry.
type NewGrant struct {
	Principal
	Capability string
	Target     string
	GrantedBy  string
	TTL        time.Duration
	RequestID  string // the request whose Allow always wrote it, if any
	// Agent, when set, makes the grant that agent's only (see Grant.Agent).
	Agent string
	// Session, when set, makes a session grant (see Grant.Agent); its
	// Agent is the grant's.
	Session Session
	// Route is the guard key of the route whose decision wrote the grant.
	Route string
}

// touchEvery is how stale last_used_at may get before a decision rewrites
// it. Staleness is judged in days, so a minute's precision is plenty, and it
// keeps the hot path of repeated decisions free of writes.
const touchEvery = time.Minute

// GrantStore keeps grants in the gateway database.
type GrantStore struct {
	db   *storage.DB
	norm Normalizer
	now  func() time.Time
}

// NewGrantStore returns a store over db. now is injected so expiry and
// staleness are tested without sleeping.
func NewGrantStore(db *storage.DB, norm Normalizer, now func() time.Time) *GrantStore {
	if now == nil {
		now = time.Now
	}
	return &GrantStore{db: db, norm: norm, now: now}
}

// Normalizer returns the target normalizer the store matches with.
func (s *GrantStore) Normalizer() Normalizer { return s.norm }

// Record writes a grant in its own transaction, with its audit row.
func (s *GrantStore) Record(ctx context.Context, g NewGrant) (Grant, error) {
	var out Grant
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		out, err = s.RecordTx(ctx, tx, g)
		return err
	})
	return out, err
}

// RecordTx writes a grant and its audit row through q, a transaction the
// caller owns (the approval flow writes the decision and the grant together).
// It refuses unknown capabilities and every capability whose
// default_approval is always: those are approved per call or by config rules.
func (s *GrantStore) RecordTx(ctx context.Context, q storage.Querier, g NewGrant) (Grant, error) {
	c, err := Lookup(g.Capability)
	if err != nil {
		return Grant{}, fmt.Errorf("record grant: %w", err)
	}
	if c.DefaultApproval == ApprovalAlways {
		return Grant{}, fmt.Errorf("record grant: %w: %s needs approval every time; "+
			"to pre-approve specific targets use an approve rule in [[policy.rules]] with a narrow target",
			ErrGrantNotAllowed, c.Name)
	}
	if g.Channel == "" || g.SenderID == "" {
		return Grant{}, fmt.Errorf("record grant: channel and sender_id are required")
	}
	if g.GrantedBy == "" {
		return Grant{}, fmt.Errorf("record grant: granted_by is required")
	}
	if err := ValidateTarget(c, g.Target); err != nil {
		return Grant{}, fmt.Errorf("record grant: %w", err)
	}
	if g.TTL < 0 {
		return Grant{}, fmt.Errorf("record grant: negative ttl %s", g.TTL)
	}
	if (g.Session.ID == "") != (g.Session.Agent == "") {
		return Grant{}, fmt.Errorf("record grant: a session grant needs both its agent and its session id")
	}
	agent := g.Agent
	if g.Session.ID != "" {
		if agent != "" && agent != g.Session.Agent {
			return Grant{}, fmt.Errorf("record grant: agent %q is not the session's agent %q", agent, g.Session.Agent)
		}
		agent = g.Session.Agent
	}
	if g.Route != "" && agent == "" {
		return Grant{}, fmt.Errorf("record grant: a guarded route's grant is one agent's")
	}
	if g.Session.ID != "" && g.TTL == 0 {
		return Grant{}, fmt.Errorf("record grant: a session grant must expire")
	}
	target := g.Target
	switch c.TargetKind {
	case KindNone:
		target = "*"
	case KindPathGlob:
		target = s.norm.cleanPath(target)
	case KindHost:
		// A grant's host is always a clean host or *.parent: never what
		// a misread URL left (the scheme of "http:good.com").
		target = hostPattern(target)
		if !validGrantHost(target) {
			return Grant{}, fmt.Errorf("record grant: %w: %q is not a host or *.parent", ErrBadTarget, g.Target)
		}
	}
	now := s.now().UTC()
	out := Grant{
		Channel: g.Channel, SenderID: g.SenderID, Capability: c.Name, Target: target,
		GrantedAt: now.Truncate(time.Microsecond), GrantedBy: g.GrantedBy, Active: true, RequestID: g.RequestID,
		Agent: agent, SessionID: g.Session.ID, Route: g.Route,
	}
	var expires any
	if g.TTL > 0 {
		e := now.Add(g.TTL).Truncate(time.Microsecond)
		out.ExpiresAt = &e
		expires = storage.FormatTime(e)
	}
	err = q.QueryRowContext(ctx, insertGrant, g.Channel, g.SenderID, c.Name, target,
		s.norm.Anchor(c.TargetKind, target), storage.FormatTime(now), expires, g.GrantedBy,
		sql.NullString{String: g.RequestID, Valid: g.RequestID != ""}, agent, g.Session.ID, g.Route).Scan(&out.ID)
	if err != nil {
		return Grant{}, fmt.Errorf("record grant: %w", err)
	}
	err = storage.AppendAudit(ctx, q, storage.AuditEvent{
		At: now, Actor: g.GrantedBy, Event: storage.AuditGrantWritten, RequestID: g.RequestID, GrantID: out.ID,
		Detail: grantDetail(out),
	})
	if err != nil {
		return Grant{}, err
	}
	return out, nil
}

// grantDetail is the audit detail of a grant written.
func grantDetail(g Grant) map[string]any {
	d := map[string]any{"channel": g.Channel, "sender_id": g.SenderID, "capability": g.Capability, "target": g.Target}
	if g.Agent != "" {
		d["agent"] = g.Agent
	}
	if g.SessionID != "" {
		d["session_id"] = g.SessionID
	}
	if g.Route != "" {
		d["route"] = g.Route
	}
	return d
}

// FindMatching returns the active grant of p that covers target for the
// capability, or nil. Revoked and expired grants never match, nor a
// session grant of another agent or session than ss.
func (s *GrantStore) FindMatching(ctx context.Context, p Principal, ss Session, capability, target string) (*Grant, error) {
	c, err := Lookup(capability)
	if err != nil {
		return nil, err
	}
	anchors := s.norm.grantAnchors(c.TargetKind, target)
	query, list := findCandidatesPG, any(anchors)
	if s.db.Dialect == storage.SQLite {
		var b strings.Builder
		b.WriteByte('[')
		for i, a := range anchors {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(a))
		}
		b.WriteByte(']')
		query, list = findCandidates, b.String()
	}
	now := s.now()
	rows, err := s.db.QueryContext(ctx, query, p.Channel, p.SenderID, c.Name, storage.FormatTime(now), list)
	if err != nil {
		return nil, fmt.Errorf("find grant: %w", err)
	}
	var found *Grant
	for rows.Next() {
		g, err := scanGrant(rows, now)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("find grant: %w", err)
		}
		if found == nil && g.covers(ss) && s.norm.MatchGrant(c.TargetKind, g.Target, target) {
			found = &g
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find grant: %w", err)
	}
	return found, nil
}

// Touch sets g's last_used_at to now, when it is older than touchEvery: a
// grant just decided a request.
func (s *GrantStore) Touch(ctx context.Context, g *Grant) error { return s.touchAt(ctx, g, s.now()) }

// touchAt is Touch with now, the time of the use.
func (s *GrantStore) touchAt(ctx context.Context, g *Grant, now time.Time) error {
	if g.LastUsedAt != nil && now.Sub(*g.LastUsedAt) < touchEvery {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, touchGrant, storage.FormatTime(now), g.ID); err != nil {
		return fmt.Errorf("touch grant %d: %w", g.ID, err)
	}
	t := now.UTC().Truncate(time.Microsecond)
	g.LastUsedAt = &t
	return nil
}

// jsonString quotes s as a JSON string (for the json_each list of anchors).
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// GrantFilter narrows List. Empty fields match everything; All includes
// revoked and expired grants.
type GrantFilter struct {
	Channel  string
	SenderID string
	// Agent, when set, keeps the grants that agent's requests may use:
	// its own and those for every agent, never another agent's.
	Agent string
	All   bool
	Limit int // 0 = no limit
}

// List returns grants newest first.
func (s *GrantStore) List(ctx context.Context, f GrantFilter) ([]Grant, error) {
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = math.MaxInt64 // no limit, in words both engines accept (SQLite's -1 is an error in PostgreSQL)
	}
	now := s.now()
	rows, err := s.db.QueryContext(ctx, listGrants, f.Channel, f.SenderID, f.All, storage.FormatTime(now), limit, f.Agent)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	defer rows.Close()
	out := []Grant{}
	for rows.Next() {
		g, err := scanGrant(rows, now)
		if err != nil {
			return nil, fmt.Errorf("list grants: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// CountActive counts active grants (for the metrics gauge).
func (s *GrantStore) CountActive(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, countActiveGrants, storage.FormatTime(s.now())).Scan(&n)
	return n, err
}

// Get returns one grant by id, or ErrNotFound.
func (s *GrantStore) Get(ctx context.Context, id int64) (Grant, error) {
	return s.GetTx(ctx, s.db, id)
}

// GetTx is Get through q.
func (s *GrantStore) GetTx(ctx context.Context, q storage.Querier, id int64) (Grant, error) {
	row := q.QueryRowContext(ctx, getGrant, id)
	g, err := scanGrant(row, s.now())
	if errors.Is(err, sql.ErrNoRows) {
		return Grant{}, fmt.Errorf("grant %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("grant %d: %w", id, err)
	}
	return g, nil
}

// Revoke revokes grant id and reports whether anything changed: false for a
// grant already revoked or one that does not exist (a no-op, not an error).
func (s *GrantStore) Revoke(ctx context.Context, id int64, reason, by string) (bool, error) {
	return s.RevokeSigned(ctx, id, reason, by, nil)
}

// RevokeSigned is Revoke with signed added to its audit row: the passkey
// assertion of the admin who revoked it (see NewRule.Signed).
func (s *GrantStore) RevokeSigned(ctx context.Context, id int64, reason, by string, signed map[string]any) (bool, error) {
	var changed bool
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		changed, err = s.revokeTx(ctx, tx, id, reason, by, signed)
		return err
	})
	return changed, err
}

// RevokeTx is Revoke inside the caller's transaction, with its audit row.
func (s *GrantStore) RevokeTx(ctx context.Context, q storage.Querier, id int64, reason, by string) (bool, error) {
	return s.revokeTx(ctx, q, id, reason, by, nil)
}

func (s *GrantStore) revokeTx(ctx context.Context, q storage.Querier, id int64, reason, by string, signed map[string]any) (bool, error) {
	if reason == "" {
		reason = "revoked"
	}
	now := s.now()
	res, err := q.ExecContext(ctx, revokeGrant, storage.FormatTime(now), reason, id)
	if err != nil {
		return false, fmt.Errorf("revoke grant %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return false, err
	}
	detail := map[string]any{"reason": reason}
	maps.Copy(detail, signed)
	err = storage.AppendAudit(ctx, q, storage.AuditEvent{
		At: now, Actor: by, Event: storage.AuditGrantRevoked, GrantID: id,
		Detail: detail,
	})
	return err == nil, err
}

type scanner interface{ Scan(dest ...any) error }

func scanGrant(sc scanner, now time.Time) (Grant, error) {
	var g Grant
	var granted string
	var expires, used, revoked, reason sql.NullString
	if err := sc.Scan(&g.ID, &g.Channel, &g.SenderID, &g.Capability, &g.Target, &granted, &expires,
		&g.GrantedBy, &used, &revoked, &reason, &g.RequestID, &g.Agent, &g.SessionID, &g.Uses, &g.Route); err != nil {
		return Grant{}, err
	}
	var err error
	if g.GrantedAt, err = storage.ParseTime(granted); err != nil {
		return Grant{}, err
	}
	g.ExpiresAt = optTime(expires)
	g.LastUsedAt = optTime(used)
	g.RevokedAt = optTime(revoked)
	if reason.Valid {
		g.RevokeReason = &reason.String
	}
	g.Active = g.RevokedAt == nil && (g.ExpiresAt == nil || g.ExpiresAt.After(now))
	return g, nil
}

func optTime(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t, err := storage.ParseTime(s.String)
	if err != nil {
		return nil
	}
	return &t
}
