package passkeys

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/metnos/gateway/storage"
)

// The purposes of a ceremony: a challenge answered for one is refused for
// another.
const (
	purposeRegister = "register"
	purposeLogin    = "login"
	purposeStepUp   = "step_up"
)

// Bounds of the sign-in challenges, which anyone may begin without a
// login: live ones per source address, and in all. Past either, a begin is
// refused (ErrTooManyLogins) and stores nothing.
const (
	MaxLoginsPerSource = 10
	MaxLogins          = 1000
)

// ErrTooManyLogins refuses a sign-in begun past MaxLoginsPerSource or
// MaxLogins live challenges.
var ErrTooManyLogins = errors.New("too many passkey sign-ins begun; try again in a few minutes")

// ceremony is one stored challenge.
type ceremony struct {
	ID        string
	Purpose   string
	Source    string // the address a sign-in was begun from
	User      string // the web user it was started for ("" for a sign-in)
	RequestID string
	Choice    string // the decision's choice as the caller encoded it
	Content   []byte
	Nonce     []byte
	Session   webauthn.SessionData
}

// begin stores c with a fresh id, valid CeremonyTTL, and deletes the
// expired ones. A sign-in is counted first, in the same transaction, so
// concurrent begins cannot pass the bounds together.
func (s *Store) begin(ctx context.Context, c ceremony) (string, error) {
	now := s.now()
	c.ID = b64(randomBytes(24))
	sess, err := json.Marshal(c.Session)
	if err != nil {
		return "", fmt.Errorf("passkey challenge: %w", err)
	}
	if c.Purpose == purposeLogin && now.UnixNano() < s.fullUntil.Load() {
		// Full a moment ago: refused without a write transaction, which
		// would queue behind (and hold back) every other writer.
		return "", ErrTooManyLogins
	}
	at := storage.FormatTime(now)
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM passkey_ceremonies WHERE expires_at <= $1`, at); err != nil {
			return err
		}
		if c.Purpose == purposeLogin {
			// Counted with every replica's begins held back (CapLock).
			if err := s.db.CapLock(ctx, tx, "passkey_logins"); err != nil {
				return err
			}
			if err := s.loginRoom(ctx, tx, c.Source, now); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO passkey_ceremonies (id, purpose, web_user, request_id, choice,
		content, nonce, session_data, created_at, expires_at, source) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			c.ID, c.Purpose, c.User, c.RequestID, c.Choice, string(c.Content), b64(c.Nonce), string(sess),
			at, storage.FormatTime(now.Add(CeremonyTTL)), c.Source)
		return err
	})
	if errors.Is(err, ErrTooManyLogins) {
		return "", err
	}
	if err != nil {
		return "", fmt.Errorf("passkey challenge: %w", err)
	}
	return c.ID, nil
}

// fullFor is how long a store, having counted MaxLogins live sign-ins,
// refuses more without counting again: a flood past the bound costs no
// database work.
const fullFor = time.Second

// loginRoom refuses one more sign-in from source (ErrTooManyLogins) when
// MaxLoginsPerSource of its, or MaxLogins in all, are live at now.
func (s *Store) loginRoom(ctx context.Context, q storage.Querier, source string, now time.Time) error {
	if now.UnixNano() < s.fullUntil.Load() {
		return ErrTooManyLogins
	}
	at := storage.FormatTime(now)
	var mine, all int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM passkey_ceremonies
		WHERE purpose = $1 AND source = $2 AND expires_at > $3`, purposeLogin, source, at).Scan(&mine); err != nil {
		return fmt.Errorf("passkey challenge: %w", err)
	}
	if mine >= MaxLoginsPerSource {
		return ErrTooManyLogins
	}
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM passkey_ceremonies
		WHERE purpose = $1 AND expires_at > $2`, purposeLogin, at).Scan(&all); err != nil {
		return fmt.Errorf("passkey challenge: %w", err)
	}
	if all >= MaxLogins {
		s.fullUntil.Store(now.Add(fullFor).UnixNano())
		return ErrTooManyLogins
	}
	return nil
}

// take spends ceremony id of purpose for user: the same statement checks
// that it is unused and unexpired and marks it used, so a challenge is
// answered once, on any replica. A ceremony of another user or purpose is
// not found (and stays unspent).
func (s *Store) take(ctx context.Context, id, purpose, forUser string) (ceremony, error) {
	now := storage.FormatTime(s.now())
	c := ceremony{ID: id, Purpose: purpose}
	var content, nonce, sess string
	err := s.db.QueryRowContext(ctx, `UPDATE passkey_ceremonies SET used_at = $2
		WHERE id = $1 AND purpose = $3 AND web_user = $4 AND used_at IS NULL AND expires_at > $2
		RETURNING web_user, request_id, choice, content, nonce, session_data`, id, now, purpose, forUser).
		Scan(&c.User, &c.RequestID, &c.Choice, &content, &nonce, &sess)
	if errors.Is(err, sql.ErrNoRows) {
		return ceremony{}, ErrNoCeremony
	}
	if err != nil {
		return ceremony{}, fmt.Errorf("passkey challenge: %w", err)
	}
	c.Content = []byte(content)
	if c.Nonce, err = base64.RawURLEncoding.DecodeString(nonce); err != nil {
		return ceremony{}, fmt.Errorf("passkey challenge: nonce: %w", err)
	}
	if err := json.Unmarshal([]byte(sess), &c.Session); err != nil {
		return ceremony{}, fmt.Errorf("passkey challenge: %w", err)
	}
	return c, nil
}
