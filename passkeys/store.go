// Package passkeys keeps the web users' passkeys (WebAuthn, with
// github.com/go-webauthn/webauthn) in the gateway database and runs their
// ceremonies: adding one, signing in with one, and the step-up that a
// route with step_up = "passkey" asks of every allow, whose signature
// commits to the request and the decision (Content) and goes into the
// audit trail, verifiable offline (VerifyRow).
//
// Every challenge is stored server-side and spent once; a public key
// stays after its passkey is removed, so old audit rows stay verifiable.
package passkeys

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/metnos/gateway/storage"
)

// Passkey is one web user's passkey.
type Passkey struct {
	ID           int64
	User         string
	Name         string
	CredentialID string // base64url
	PublicKey    []byte // COSE key
	SignCount    uint32
	CreatedAt    time.Time
	LastUsedAt   *time.Time
	RemovedAt    *time.Time
	handle       []byte
	cred         webauthn.Credential
}

// Errors callers test with errors.Is.
var (
	// ErrNoCeremony: the ceremony is unknown, spent, expired, or not this
	// user's (a challenge is answered once).
	ErrNoCeremony = errors.New("passkey challenge unknown, already used or expired")
	// ErrRefused: the assertion or attestation did not verify (wrong or
	// unknown passkey, another challenge, no user verification, a sign
	// count that went backwards).
	ErrRefused = errors.New("passkey refused")
	// ErrNotFound: no such passkey of this user.
	ErrNotFound = errors.New("no such passkey")
)

// Store keeps passkeys and ceremonies.
type Store struct {
	db  *storage.DB
	now func() time.Time
	// fullUntil (Unix nanoseconds): until then MaxLogins sign-ins are
	// known to be live (loginRoom).
	fullUntil atomic.Int64
}

// New returns a store over db.
func New(db *storage.DB, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return b
}

const passkeyColumns = `id, web_user, user_handle, credential_id, public_key, sign_count, credential, name, created_at,
last_used_at, removed_at`

func scanPasskey(sc interface{ Scan(...any) error }) (Passkey, error) {
	var p Passkey
	var handle, pub, cred, created string
	var used, removed sql.NullString
	var count int64
	if err := sc.Scan(&p.ID, &p.User, &handle, &p.CredentialID, &pub, &count, &cred, &p.Name, &created, &used, &removed); err != nil {
		return Passkey{}, err
	}
	var err error
	if p.handle, err = base64.RawURLEncoding.DecodeString(handle); err != nil {
		return Passkey{}, fmt.Errorf("passkey %d: user handle: %w", p.ID, err)
	}
	if p.PublicKey, err = base64.RawURLEncoding.DecodeString(pub); err != nil {
		return Passkey{}, fmt.Errorf("passkey %d: public key: %w", p.ID, err)
	}
	if err := json.Unmarshal([]byte(cred), &p.cred); err != nil {
		return Passkey{}, fmt.Errorf("passkey %d: credential: %w", p.ID, err)
	}
	p.SignCount = uint32(count)
	p.cred.Authenticator.SignCount = p.SignCount
	p.CreatedAt, _ = storage.ParseTime(created)
	if used.Valid {
		t, _ := storage.ParseTime(used.String)
		p.LastUsedAt = &t
	}
	if removed.Valid {
		t, _ := storage.ParseTime(removed.String)
		p.RemovedAt = &t
	}
	return p, nil
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]Passkey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+passkeyColumns+` FROM passkeys `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("read passkeys: %w", err)
	}
	defer rows.Close()
	var out []Passkey
	for rows.Next() {
		p, err := scanPasskey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// List returns user's passkeys in use, oldest first.
func (s *Store) List(ctx context.Context, user string) ([]Passkey, error) {
	return s.query(ctx, `WHERE web_user = $1 AND removed_at IS NULL ORDER BY id`, user)
}

// ByCredentialID returns the passkey of a credential id (base64url),
// removed or not: the audit check needs the keys of removed ones too.
func (s *Store) ByCredentialID(ctx context.Context, credentialID string) (Passkey, error) {
	list, err := s.query(ctx, `WHERE credential_id = $1`, credentialID)
	if err != nil {
		return Passkey{}, err
	}
	if len(list) == 0 {
		return Passkey{}, ErrNotFound
	}
	return list[0], nil
}

// Remove marks one of user's passkeys removed, with its audit row (by:
// who removed it, "web:ada", "cli"): it signs nothing more, and its public
// key stays for the audit check.
func (s *Store) Remove(ctx context.Context, user string, id int64, by string) (Passkey, error) {
	list, err := s.query(ctx, `WHERE id = $1 AND web_user = $2 AND removed_at IS NULL`, id, user)
	if err != nil {
		return Passkey{}, err
	}
	if len(list) == 0 {
		return Passkey{}, ErrNotFound
	}
	if err := s.remove(ctx, list[0], by, "removed"); err != nil {
		return Passkey{}, err
	}
	return list[0], nil
}

// RemoveAll removes every passkey in use of user ("" for every user's),
// each with its audit row saying why, and returns them.
func (s *Store) RemoveAll(ctx context.Context, user, by, why string) ([]Passkey, error) {
	q, args := `WHERE removed_at IS NULL ORDER BY id`, []any{}
	if user != "" {
		q, args = `WHERE web_user = $1 AND removed_at IS NULL ORDER BY id`, []any{user}
	}
	list, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	var out []Passkey
	for _, p := range list {
		switch err := s.remove(ctx, p, by, why); {
		case errors.Is(err, ErrNotFound): // removed meanwhile
		case err != nil:
			return out, err
		default:
			out = append(out, p)
		}
	}
	return out, nil
}

// remove marks p removed and writes its audit row, in one transaction.
func (s *Store) remove(ctx context.Context, p Passkey, by, why string) error {
	now := s.now()
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		res, err := tx.ExecContext(ctx, `UPDATE passkeys SET removed_at = $1 WHERE id = $2 AND removed_at IS NULL`,
			storage.FormatTime(now), p.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by, Event: storage.AuditPasskeyRemoved,
			Detail: p.auditDetail(why)})
	})
	if errors.Is(err, ErrNotFound) {
		return err
	}
	if err != nil {
		return fmt.Errorf("remove passkey: %w", err)
	}
	return nil
}

// ChangedSince returns the passkeys added or removed since then, of every
// user, oldest first: what the web page tells every user.
func (s *Store) ChangedSince(ctx context.Context, since time.Time) ([]Passkey, error) {
	at := storage.FormatTime(since)
	return s.query(ctx, `WHERE created_at >= $1 OR removed_at >= $1 ORDER BY id`, at)
}

// All returns every passkey in use, of every user, oldest first.
func (s *Store) All(ctx context.Context) ([]Passkey, error) {
	return s.query(ctx, `WHERE removed_at IS NULL ORDER BY id`)
}

// used records an assertion of p with sign count count. A count that does
// not move forward from a non-zero one is a cloned authenticator and is
// refused; synced passkeys, which always say 0, keep working. The check
// and the write are one statement, so two replicas cannot both pass it.
func (s *Store) used(ctx context.Context, p Passkey, count uint32) error {
	res, err := s.db.ExecContext(ctx, `UPDATE passkeys SET sign_count = $1, last_used_at = $2
		WHERE id = $3 AND removed_at IS NULL AND (sign_count = 0 OR sign_count < $1)`,
		int64(count), storage.FormatTime(s.now()), p.ID)
	if err != nil {
		return fmt.Errorf("passkey: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: the passkey %q said sign count %d after %d (a cloned authenticator?), or it was removed",
			ErrRefused, p.Name, count, p.SignCount)
	}
	return nil
}

// user is a web user as go-webauthn sees it, with their passkeys in use.
type user struct {
	name   string
	handle []byte
	keys   []Passkey
}

func (u *user) WebAuthnID() []byte          { return u.handle }
func (u *user) WebAuthnName() string        { return u.name }
func (u *user) WebAuthnDisplayName() string { return u.name }
func (u *user) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, len(u.keys))
	for i, k := range u.keys {
		out[i] = k.cred
	}
	return out
}

func (u *user) key(rawID []byte) (Passkey, bool) {
	id := b64(rawID)
	for _, k := range u.keys {
		if k.CredentialID == id {
			return k, true
		}
	}
	return Passkey{}, false
}

// userOf loads a web user with their passkeys; the handle is their
// passkeys' (one random handle per user, made with the first passkey).
func (s *Store) userOf(ctx context.Context, name string) (*user, error) {
	keys, err := s.List(ctx, name)
	if err != nil {
		return nil, err
	}
	u := &user{name: name, keys: keys}
	var handle string
	err = s.db.QueryRowContext(ctx, `SELECT user_handle FROM passkeys WHERE web_user = $1 ORDER BY id LIMIT 1`, name).Scan(&handle)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		u.handle = randomBytes(32)
	case err != nil:
		return nil, fmt.Errorf("read passkeys: %w", err)
	default:
		if u.handle, err = base64.RawURLEncoding.DecodeString(handle); err != nil {
			return nil, fmt.Errorf("passkeys of %s: user handle: %w", name, err)
		}
	}
	return u, nil
}
