package passkeys

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/metnos/gateway/storage"
)

// MaxNameBytes bounds a passkey's name.
const MaxNameBytes = 100

// Begun is a started ceremony: its id, which the browser sends back with
// its answer, and the options for navigator.credentials (JSON).
type Begun struct {
	Ceremony string          `json:"ceremony"`
	Options  json.RawMessage `json:"options"`
}

func begun(id string, options any) (Begun, error) {
	b, err := json.Marshal(options)
	if err != nil {
		return Begun{}, fmt.Errorf("passkey options: %w", err)
	}
	return Begun{Ceremony: id, Options: b}, nil
}

// BeginRegistration starts adding a passkey for web user name: a resident
// key with user verification, none of the user's passkeys again.
func (s *Store) BeginRegistration(ctx context.Context, rp RP, name string) (Begun, error) {
	wa, err := rp.webauthn()
	if err != nil {
		return Begun{}, err
	}
	u, err := s.userOf(ctx, name)
	if err != nil {
		return Begun{}, err
	}
	var exclude []protocol.CredentialDescriptor
	for _, c := range u.WebAuthnCredentials() {
		exclude = append(exclude, c.Descriptor())
	}
	opts, sess, err := wa.BeginRegistration(u, webauthn.WithExclusions(exclude),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired))
	if err != nil {
		return Begun{}, fmt.Errorf("passkey registration: %w", err)
	}
	id, err := s.begin(ctx, ceremony{Purpose: purposeRegister, User: name, Session: *sess})
	if err != nil {
		return Begun{}, err
	}
	return begun(id, opts)
}

// FinishRegistration checks the browser's answer (credential: the
// PublicKeyCredential's JSON) to ceremony id of web user name and stores
// the passkey under label (empty: defaultName), with its audit row;
// proof says how the user proved who they were ("login link",
// "passkey"), for that row.
func (s *Store) FinishRegistration(ctx context.Context, rp RP, name, id, label, defaultName, proof string, credential []byte) (Passkey, error) {
	label = strings.TrimSpace(label)
	if label == "" {
		label = defaultName
	}
	if len(label) > MaxNameBytes || !utf8.ValidString(label) || strings.ContainsFunc(label, isControl) {
		return Passkey{}, fmt.Errorf("%w: a passkey's name is at most %d bytes of text", ErrRefused, MaxNameBytes)
	}
	c, err := s.take(ctx, id, purposeRegister, name)
	if err != nil {
		return Passkey{}, err
	}
	wa, err := rp.webauthn()
	if err != nil {
		return Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return Passkey{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	u, err := s.userOf(ctx, name)
	if err != nil {
		return Passkey{}, err
	}
	u.handle = c.Session.UserID // the handle the authenticator stored
	cred, err := wa.CreateCredential(u, c.Session, parsed)
	if err != nil {
		return Passkey{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	if !cred.Flags.UserVerified {
		return Passkey{}, fmt.Errorf("%w: the authenticator did not verify the user", ErrRefused)
	}
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return Passkey{}, fmt.Errorf("passkey: %w", err)
	}
	now := s.now()
	p := Passkey{User: name, Name: label, CredentialID: b64(cred.ID), PublicKey: cred.PublicKey,
		SignCount: cred.Authenticator.SignCount, CreatedAt: now, handle: u.handle, cred: *cred}
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO passkeys (web_user, user_handle, credential_id, public_key, sign_count,
		credential, name, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
			name, b64(u.handle), p.CredentialID, b64(p.PublicKey), int64(p.SignCount), string(credJSON), label,
			storage.FormatTime(now)).Scan(&p.ID)
		if err != nil {
			return err
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: "web:" + name,
			Event: storage.AuditPasskeyAdded, Detail: p.auditDetail(proof)})
	})
	if err != nil {
		return Passkey{}, fmt.Errorf("store passkey: %w", err)
	}
	return p, nil
}

// auditDetail is what the audit row of adding or removing p says; how
// says how its user proved who they were, or why it was removed.
func (p Passkey) auditDetail(how string) map[string]any {
	// Not the signed rows' keys (KeyName, KeyCredentialID): this row
	// carries no signature to check.
	return map[string]any{"web_user": p.User, "passkey": p.Name, "credential_id": p.CredentialID, "how": how}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// describe is a library error as one line: its details, when it has them.
func describe(err error) string {
	if pe, ok := err.(*protocol.Error); ok && pe.Details != "" {
		return pe.Details
	}
	return err.Error()
}
