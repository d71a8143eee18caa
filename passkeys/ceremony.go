package passkeys

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

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

// ceremony is one stored challenge.
type ceremony struct {
	ID        string
	Purpose   string
	User      string // the web user it was started for ("" for a sign-in)
	RequestID string
	Choice    string // the decision's choice as the caller encoded it
	Content   []byte
	Nonce     []byte
	Session   webauthn.SessionData
}

// begin stores c with a fresh id, valid CeremonyTTL.
func (s *Store) begin(ctx context.Context, c ceremony) (string, error) {
	now := s.now()
	c.ID = b64(randomBytes(24))
	sess, err := json.Marshal(c.Session)
	if err != nil {
		return "", fmt.Errorf("passkey challenge: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM passkey_ceremonies WHERE expires_at < $1`,
		storage.FormatTime(now.Add(-CeremonyTTL))); err != nil {
		return "", fmt.Errorf("passkey challenge: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO passkey_ceremonies (id, purpose, web_user, request_id, choice,
		content, nonce, session_data, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.Purpose, c.User, c.RequestID, c.Choice, string(c.Content), b64(c.Nonce), string(sess),
		storage.FormatTime(now), storage.FormatTime(now.Add(CeremonyTTL))); err != nil {
		return "", fmt.Errorf("passkey challenge: %w", err)
	}
	return c.ID, nil
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
