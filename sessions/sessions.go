// Package sessions keeps the web page's logins in the gateway database:
// one-time login links and the sessions they start. Only the SHA-256 of a
// link or session token is stored, so a copy of the database lets nobody
// in; every check reads the database, so a logout (or `gateway logout
// --all`) ends a session on every replica at once and survives restarts.
package sessions

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/metnos/gateway/storage"
)

const (
	// LinkTTL is how long a login link can be opened (once).
	LinkTTL = 15 * time.Minute
	// SessionTTL is how long a web session lasts from its login.
	SessionTTL = 12 * time.Hour
)

// ErrInvalidLink is a login link that is unknown, already used or expired.
var ErrInvalidLink = errors.New("login link unknown, already used or expired")

// ErrNoSession is a session token that is unknown, ended or expired.
var ErrNoSession = errors.New("no such session")

// GoneError is a login link or session of a user who is no longer a web
// user of the config: refused, and the session ended.
type GoneError struct{ User string }

func (e *GoneError) Error() string {
	return fmt.Sprintf("%s is no longer a web user of this gateway", e.User)
}

// Users says whether a name is a web user of the running config. Every
// link and session is checked against it when used, so a user removed
// from the config (then a restart) gets in nowhere, on any replica.
type Users func(name string) bool

// Session is a logged-in web user.
type Session struct {
	User      string
	ExpiresAt time.Time
	// Via is how the session was started: "link", "passkey",
	// "admin_token".
	Via string
	// StartedAt is when it was.
	StartedAt time.Time
	// CSRF is the token every form of this session carries: derived from
	// the session token, which only the browser's HttpOnly cookie holds, so
	// a client without the session cannot compute it and cannot choose it.
	CSRF string
}

// Store keeps links and sessions.
type Store struct {
	db    *storage.DB
	now   func() time.Time
	users Users
}

// New returns a store over db whose links and sessions work for users
// only (nil: for no one).
func New(db *storage.DB, now func() time.Time, users Users) *Store {
	if now == nil {
		now = time.Now
	}
	if users == nil {
		users = func(string) bool { return false }
	}
	return &Store{db: db, now: now, users: users}
}

// HashOf is what the database keeps of a secret token: its SHA-256, hex.
func HashOf(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// RandomToken is a new secret token: 32 random bytes, base64url.
func RandomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// csrfOf derives a session's CSRF token from its (secret) session token.
func csrfOf(tok string) string {
	h := sha256.Sum256([]byte("gateway csrf\x00" + tok))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

const (
	insertLink = `INSERT INTO web_login_links (hash, web_user, created_at, expires_at) VALUES ($1, $2, $3, $4)`
	// useLink marks the link used in the same statement that checks it, so
	// two openings of one link (two replicas, a double click) start one
	// session between them.
	useLink = `UPDATE web_login_links SET used_at = $2 WHERE hash = $1 AND used_at IS NULL AND expires_at > $2
RETURNING web_user`
	insertSession = `INSERT INTO web_sessions (hash, web_user, via, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`
	getSession    = `SELECT web_user, expires_at, via, created_at, ended_at IS NULL AND expires_at > $2 FROM web_sessions WHERE hash = $1`
	linkUser      = `SELECT web_user FROM web_login_links WHERE hash = $1`
	endSession    = `UPDATE web_sessions SET ended_at = $2 WHERE hash = $1 AND ended_at IS NULL`
	endAll        = `UPDATE web_sessions SET ended_at = $1 WHERE ended_at IS NULL AND expires_at > $1`
	endUser       = `UPDATE web_sessions SET ended_at = $1 WHERE ended_at IS NULL AND expires_at > $1 AND web_user = $2`
	spendLinks    = `UPDATE web_login_links SET used_at = $1 WHERE used_at IS NULL AND expires_at > $1 AND web_user = $2`
	liveUsers     = `SELECT web_user FROM web_sessions WHERE ended_at IS NULL AND expires_at > $1
UNION SELECT web_user FROM web_login_links WHERE used_at IS NULL AND expires_at > $1`
	anySession = `SELECT 1 FROM web_sessions LIMIT 1`
	pruneLinks = `DELETE FROM web_login_links WHERE expires_at < $1`
)

// NewLink makes a one-time login link token for user, valid LinkTTL.
func (s *Store) NewLink(ctx context.Context, user string) (token string, expires time.Time, err error) {
	now := s.now()
	token, expires = RandomToken(), now.Add(LinkTTL)
	if _, err := s.db.ExecContext(ctx, pruneLinks, storage.FormatTime(now.Add(-24*time.Hour))); err != nil {
		return "", time.Time{}, fmt.Errorf("login link: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, insertLink, HashOf(token), user, storage.FormatTime(now), storage.FormatTime(expires)); err != nil {
		return "", time.Time{}, fmt.Errorf("login link: %w", err)
	}
	return token, expires, nil
}

// UseLink spends a login link and starts a session for its user, in one
// transaction: the session token goes in the browser's cookie. A link of
// a user no longer configured is spent and refused (*GoneError).
func (s *Store) UseLink(ctx context.Context, token string) (sessionToken string, sess Session, err error) {
	now := s.now()
	sessionToken = RandomToken()
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		var user string
		err := tx.QueryRowContext(ctx, useLink, HashOf(token), storage.FormatTime(now)).Scan(&user)
		if errors.Is(err, sql.ErrNoRows) {
			// A link of a user who left says so, used or not.
			if tx.QueryRowContext(ctx, linkUser, HashOf(token)).Scan(&user) == nil && !s.users(user) {
				return &GoneError{User: user}
			}
			return ErrInvalidLink
		}
		if err != nil {
			return err
		}
		if !s.users(user) {
			return &GoneError{User: user}
		}
		sess = s.session(sessionToken, user, "link", now)
		_, err = tx.ExecContext(ctx, insertSession, HashOf(sessionToken), user, "link", storage.FormatTime(now),
			storage.FormatTime(sess.ExpiresAt))
		return err
	})
	var gone *GoneError
	if errors.As(err, &gone) {
		// Spent all the same: the link must not work if the user comes back.
		if _, err := s.db.ExecContext(ctx, spendLinks, storage.FormatTime(now), gone.User); err != nil {
			return "", Session{}, fmt.Errorf("use login link: %w", err)
		}
		return "", Session{}, gone
	}
	if errors.Is(err, ErrInvalidLink) {
		return "", Session{}, err
	}
	if err != nil {
		return "", Session{}, fmt.Errorf("use login link: %w", err)
	}
	return sessionToken, sess, nil
}

func (s *Store) session(tok, user, via string, now time.Time) Session {
	return Session{User: user, ExpiresAt: now.Add(SessionTTL), CSRF: csrfOf(tok), Via: via, StartedAt: now}
}

// Start begins a session for user; via says how they proved it
// ("admin_token").
func (s *Store) Start(ctx context.Context, user, via string) (sessionToken string, sess Session, err error) {
	now := s.now()
	if !s.users(user) {
		return "", Session{}, &GoneError{User: user}
	}
	tok := RandomToken()
	sess = s.session(tok, user, via, now)
	if _, err := s.db.ExecContext(ctx, insertSession, HashOf(tok), user, via, storage.FormatTime(now),
		storage.FormatTime(sess.ExpiresAt)); err != nil {
		return "", Session{}, fmt.Errorf("start session: %w", err)
	}
	return tok, sess, nil
}

// Get returns the live session of a session token. The session of a user
// no longer configured is ended here and refused (*GoneError).
func (s *Store) Get(ctx context.Context, token string) (Session, error) {
	if token == "" {
		return Session{}, ErrNoSession
	}
	var sess Session
	var exp, started string
	var live bool
	err := s.db.QueryRowContext(ctx, getSession, HashOf(token), storage.FormatTime(s.now())).Scan(&sess.User, &exp,
		&sess.Via, &started, &live)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNoSession
	}
	if err != nil {
		return Session{}, fmt.Errorf("read session: %w", err)
	}
	if !s.users(sess.User) {
		// Live or not, the session of a user who left says so.
		if err := s.End(ctx, token); err != nil {
			return Session{}, err
		}
		return Session{}, &GoneError{User: sess.User}
	}
	if !live {
		return Session{}, ErrNoSession
	}
	sess.ExpiresAt, _ = storage.ParseTime(exp)
	sess.StartedAt, _ = storage.ParseTime(started)
	sess.CSRF = csrfOf(token)
	return sess, nil
}

// End ends one session (a logout).
func (s *Store) End(ctx context.Context, token string) error {
	if _, err := s.db.ExecContext(ctx, endSession, HashOf(token), storage.FormatTime(s.now())); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// EndAll ends every live session and says how many there were.
func (s *Store) EndAll(ctx context.Context) (int, error) {
	res, err := s.db.ExecContext(ctx, endAll, storage.FormatTime(s.now()))
	if err != nil {
		return 0, fmt.Errorf("end sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// EndUser ends every live session of user and spends their unused login
// links; it says how many sessions there were.
func (s *Store) EndUser(ctx context.Context, user string) (int, error) {
	now := storage.FormatTime(s.now())
	var n int64
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		res, err := tx.ExecContext(ctx, endUser, now, user)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, spendLinks, now, user)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("end the sessions of %s: %w", user, err)
	}
	return int(n), nil
}

// EndGone ends the sessions and spends the links of every user who is no
// longer configured, and names them: run at start, so a replica still on
// an older config lets them in no more either.
func (s *Store) EndGone(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, liveUsers, storage.FormatTime(s.now()))
	if err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	var gone []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read sessions: %w", err)
		}
		if !s.users(u) {
			gone = append(gone, u)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	for _, u := range gone {
		if _, err := s.EndUser(ctx, u); err != nil {
			return nil, err
		}
	}
	return gone, nil
}

// AnyLogin reports whether any web user ever logged in: until one has,
// `gateway serve` prints a login link at start.
func (s *Store) AnyLogin(ctx context.Context) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, anySession).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read sessions: %w", err)
	}
	return true, nil
}
