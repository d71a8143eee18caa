package policy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

const tokenColumns = `id, name, agent, parent_id, profile, used, created_at, expires_at, revoked_at, created_by, path`

// The statements of this file.
const (
	insertToken = `INSERT INTO agent_tokens
	(id, hash, agent, parent_id, path, name, profile, max_requests, used, created_at, expires_at, created_by)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $10, $11)`
	countLiveTokens    = `SELECT COUNT(*) FROM agent_tokens WHERE agent = $1 AND revoked_at IS NULL AND expires_at > $2`
	countDeadAncestors = `SELECT COUNT(*) FROM agent_tokens WHERE agent = $1 AND $2 LIKE path || '%'
	AND (revoked_at IS NOT NULL OR expires_at <= $3)`
	tokenByHash = `SELECT ` + tokenColumns + ` FROM agent_tokens WHERE hash = $1`
	tokenPath   = `SELECT path FROM agent_tokens WHERE id = $1 AND agent = $2`
	useToken    = `UPDATE agent_tokens SET used = used + 1
	WHERE id = $1 AND (max_requests IS NULL OR used < max_requests)`
	listRootTokens  = `SELECT ` + tokenColumns + ` FROM agent_tokens WHERE agent = $1 AND parent_id IS NULL ORDER BY created_at DESC, id`
	listChildTokens = `SELECT ` + tokenColumns + ` FROM agent_tokens WHERE parent_id = $1 ORDER BY created_at DESC, id`
	tokenByID       = `SELECT ` + tokenColumns + ` FROM agent_tokens WHERE id = $1`
	revokeTokens    = `UPDATE agent_tokens SET revoked_at = $1
	WHERE agent = $2 AND path LIKE $3 AND revoked_at IS NULL`
)

// ChildTokenPrefix starts every child token, so the server looks up only
// tokens that can be one (a random bad token costs no query).
const ChildTokenPrefix = "gwc_"

// MaxTokenDepth bounds how deep children of children may go.
const MaxTokenDepth = 8

// Token is a child token as stored (never its plain value: only a hash).
type Token struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Agent     string       `json:"agent"`     // the root agent it acts as
	ParentID  *string      `json:"parent_id"` // null: made with the agent's own token
	Profile   TokenProfile `json:"profile"`
	Used      int          `json:"used"` // requests made with it or its descendants
	CreatedAt time.Time    `json:"created_at"`
	ExpiresAt time.Time    `json:"expires_at"`
	RevokedAt *time.Time   `json:"revoked_at"`
	CreatedBy string       `json:"created_by"`
	Active    bool         `json:"active"`
	path      string       // "/id1/id2/": its ancestors and itself, root first
}

// Label is how the token shows on cards and traces: its name, else its id.
func (t *Token) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return t.ID
}

// Caller is who makes a child token: an agent with its own token (Token
// nil), or a child token.
type Caller struct {
	Agent   string
	Profile TokenProfile // the agent's RootProfile, or the token's
	Token   *Token
	// MaxChildren caps the agent's live child tokens, at every depth
	// (agents[].max_children); 0: no cap.
	MaxChildren int
}

// TooManyChildrenError refuses a child token past the agent's
// max_children.
type TooManyChildrenError struct {
	Agent string
	Max   int
}

func (e *TooManyChildrenError) Error() string {
	return fmt.Sprintf("agent %s has %d live child tokens (agents[].max_children); revoke some, or let them expire", e.Agent, e.Max)
}

// NewToken is what Create answers, the plain token included: it is shown
// this once and stored only hashed.
type NewToken struct {
	ID        string       `json:"id"`
	Token     string       `json:"token"`
	ExpiresAt time.Time    `json:"expires_at"`
	Profile   TokenProfile `json:"profile"`
	Narrowed  []Narrowed   `json:"narrowed"`
}

// TokenStore keeps child tokens in the gateway database. Every
// authentication reads the database, so a revoke on any replica or from
// the CLI refuses the token (and its descendants) on the very next call.
type TokenStore struct {
	db   *storage.DB
	norm Normalizer
	now  func() time.Time
	// mu guards revoked, closed (and replaced) on every revoke made or
	// heard of: open streams of child tokens re-check theirs at once.
	mu      sync.Mutex
	revoked chan struct{}
}

// NoticeTokensRevoked is the change notice (storage.DB.Notify) a revoke
// sends to the other replicas; their Listen hands it to Heard.
const NoticeTokensRevoked = "tokens revoked"

// NewTokenStore returns a store over db.
func NewTokenStore(db *storage.DB, norm Normalizer, now func() time.Time) *TokenStore {
	if now == nil {
		now = time.Now
	}
	return &TokenStore{db: db, norm: norm, now: now, revoked: make(chan struct{})}
}

// Revoked returns a channel closed at the next revoke on this replica, or
// heard of from another (see Heard): a holder of an open connection then
// asks Alive again.
func (s *TokenStore) Revoked() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revoked
}

// Heard handles a change notice from another replica: NoticeTokensRevoked
// (or "", notices may have been missed) wakes every Revoked watcher.
func (s *TokenStore) Heard(msg string) {
	if msg == "" || msg == NoticeTokensRevoked {
		s.wake()
	}
}

func (s *TokenStore) wake() {
	s.mu.Lock()
	close(s.revoked)
	s.revoked = make(chan struct{})
	s.mu.Unlock()
}

// Alive says whether t and all its ancestors are still neither revoked
// nor expired, read from the database now.
func (s *TokenStore) Alive(ctx context.Context, t *Token) (bool, error) {
	err := s.checkChain(ctx, s.db, t.Agent, t.path, s.now())
	if errors.Is(err, ErrTokenRevoked) {
		return false, nil
	}
	return err == nil, err
}

func hashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

func (s *TokenStore) scan(sc scanner) (Token, error) {
	var t Token
	var parent, revoked sql.NullString
	var profile, created, expires string
	if err := sc.Scan(&t.ID, &t.Name, &t.Agent, &parent, &profile, &t.Used, &created, &expires, &revoked,
		&t.CreatedBy, &t.path); err != nil {
		return Token{}, err
	}
	if parent.Valid {
		t.ParentID = &parent.String
	}
	if err := json.Unmarshal([]byte(profile), &t.Profile); err != nil {
		return Token{}, fmt.Errorf("token %s: profile: %w", t.ID, err)
	}
	t.CreatedAt, _ = storage.ParseTime(created)
	t.ExpiresAt, _ = storage.ParseTime(expires)
	t.RevokedAt = optTime(revoked)
	t.Active = t.RevokedAt == nil && t.ExpiresAt.After(s.now())
	return t, nil
}

// Create makes a child token of the caller: its profile is Narrow of the
// caller's and the request, stored with an audit row; the plain token is
// in the answer only.
func (s *TokenStore) Create(ctx context.Context, c Caller, req TokenRequest, by string) (NewToken, error) {
	now := s.now()
	var parentExpires *time.Time
	parentPath := "/"
	var parentID any
	if c.Token != nil {
		parentExpires, parentPath, parentID = &c.Token.ExpiresAt, c.Token.path, c.Token.ID
		if strings.Count(parentPath, "/")-1 >= MaxTokenDepth {
			return NewToken{}, &FieldError{Field: "token", Err: fmt.Errorf("children may nest at most %d deep", MaxTokenDepth)}
		}
	}
	child, expires, narrowed, err := s.norm.Narrow(c.Profile, parentExpires, req, now)
	if err != nil {
		return NewToken{}, err
	}
	profile, err := json.Marshal(child)
	if err != nil {
		return NewToken{}, err
	}
	id := "t" + randomString(10)
	plain := ChildTokenPrefix + randomString(32)
	var maxReq any
	if child.MaxRequests != nil {
		maxReq = *child.MaxRequests
	}
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		if c.MaxChildren > 0 {
			// In the inserting transaction: writes take turns (every
			// replica's: CapLock), so concurrent creations cannot pass
			// the cap together.
			if err := s.db.CapLock(ctx, tx, "max_children"); err != nil {
				return err
			}
			var live int
			if err := tx.QueryRowContext(ctx, countLiveTokens, c.Agent, storage.FormatTime(now)).Scan(&live); err != nil {
				return fmt.Errorf("count tokens: %w", err)
			}
			if live >= c.MaxChildren {
				return &TooManyChildrenError{Agent: c.Agent, Max: c.MaxChildren}
			}
		}
		if c.Token != nil {
			// The parent must still be alive as this commits: a revoke of it
			// that committed first would otherwise miss this child.
			if err := s.checkChain(ctx, tx, c.Agent, c.Token.path, now); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, insertToken,
			id, hashToken(plain), c.Agent, parentID, parentPath+id+"/", req.Name, string(profile), maxReq,
			storage.FormatTime(now), storage.FormatTime(expires), by); err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		fields := make([]string, 0, len(narrowed))
		for _, nw := range narrowed {
			fields = append(fields, nw.Field)
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by, Event: storage.AuditTokenCreated,
			Detail: map[string]any{"token_id": id, "parent_id": parentID, "agent": c.Agent, "name": req.Name,
				"expires_at": storage.FormatTime(expires), "autonomy": child.Autonomy.String(), "narrowed": fields}})
	})
	if err != nil {
		return NewToken{}, err
	}
	return NewToken{ID: id, Token: plain, ExpiresAt: expires, Profile: child, Narrowed: narrowed}, nil
}

// checkChain fails unless the token at path and all its ancestors are
// neither revoked nor expired.
func (s *TokenStore) checkChain(ctx context.Context, q storage.Querier, agent, path string, now time.Time) error {
	var dead int
	err := q.QueryRowContext(ctx, countDeadAncestors, agent, path, storage.FormatTime(now)).Scan(&dead)
	if err != nil {
		return fmt.Errorf("check token: %w", err)
	}
	if dead > 0 {
		return ErrTokenRevoked
	}
	return nil
}

// Authenticate finds the live child token tok: not revoked, not expired,
// and none of its ancestors either. (nil, nil) means no such live token.
func (s *TokenStore) Authenticate(ctx context.Context, tok string) (*Token, error) {
	if !strings.HasPrefix(tok, ChildTokenPrefix) {
		return nil, nil
	}
	t, err := s.scan(s.db.QueryRowContext(ctx, tokenByHash, hashToken(tok)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate token: %w", err)
	}
	if !t.Active {
		return nil, nil
	}
	if err := s.checkChain(ctx, s.db, t.Agent, t.path, s.now()); errors.Is(err, ErrTokenRevoked) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &t, nil
}

// Covers says whether the token with id tokenID is t or one of its
// descendants ("" is the agent's own token: never). A request made with
// such a token is t's to see, wait on and cancel.
func (s *TokenStore) Covers(ctx context.Context, t *Token, tokenID string) (bool, error) {
	if tokenID == "" {
		return false, nil
	}
	if tokenID == t.ID {
		return true, nil
	}
	var path string
	err := s.db.QueryRowContext(ctx, tokenPath, tokenID, t.Agent).Scan(&path)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("token %s: %w", tokenID, err)
	}
	return strings.HasPrefix(path, t.path), nil
}

// Consume counts one request against the token and every ancestor with a
// max_requests, all or none: ErrTokenExhausted when any has made its
// number.
func (s *TokenStore) Consume(ctx context.Context, t *Token) error {
	if t.Profile.MaxRequests == nil {
		return nil // a child's bound is the minimum of its ancestors': none has one
	}
	return s.db.InTx(ctx, func(tx storage.Querier) error {
		for _, id := range strings.Split(strings.Trim(t.path, "/"), "/") {
			res, err := tx.ExecContext(ctx, useToken, id)
			if err != nil {
				return fmt.Errorf("count token use: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				if err == nil {
					err = fmt.Errorf("token %s: %w", id, ErrTokenExhausted)
				}
				return err
			}
		}
		return nil
	})
}

// Children lists the tokens made directly by the caller, newest first.
func (s *TokenStore) Children(ctx context.Context, c Caller) ([]Token, error) {
	query, args := listRootTokens,
		[]any{c.Agent}
	if c.Token != nil {
		query, args = listChildTokens,
			[]any{c.Token.ID}
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		t, err := s.scan(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Revoke revokes token id and all its descendants in one statement and
// says how many were live. The caller must own it: a token of its own
// agent when it is the agent's own token (any when admin), else the token
// itself or one below it; others are ErrNotFound, as if they did not exist.
func (s *TokenStore) Revoke(ctx context.Context, c Caller, admin bool, id, by string) (int, error) {
	t, err := s.scan(s.db.QueryRowContext(ctx, tokenByID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("token %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("token %s: %w", id, err)
	}
	owns := admin && c.Token == nil || t.Agent == c.Agent && (c.Token == nil || strings.HasPrefix(t.path, c.Token.path))
	if !owns {
		return 0, fmt.Errorf("token %s: %w", id, ErrNotFound)
	}
	var n int64
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, revokeTokens, storage.FormatTime(now), t.Agent, t.path+"%")
		if err != nil {
			return fmt.Errorf("revoke token %s: %w", id, err)
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if err := s.db.Notify(ctx, tx, NoticeTokensRevoked); err != nil {
			return err
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by, Event: storage.AuditTokenRevoked,
			Detail: map[string]any{"token_id": id, "agent": t.Agent, "revoked": n}})
	})
	if err == nil {
		s.wake()
	}
	return int(n), err
}
