package passkeys

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Proof is a verified step-up: web user User's passkey signed Content
// (through the challenge sha256(content_hash || nonce)). Only
// FinishStepUp makes one whose Valid is true; its fields go into the
// decision's audit row (AuditDetail), where VerifyRow checks them again.
type Proof struct {
	user, name, credentialID string
	requestID                string
	rpID                     string
	content                  []byte
	contentHash              string
	nonce                    []byte
	authData, clientData     []byte
	signature                []byte
}

// Valid reports whether p came out of a verified assertion.
func (p *Proof) Valid() bool { return p != nil && p.contentHash != "" && len(p.signature) > 0 }

// User is the web user whose passkey signed.
func (p *Proof) User() string { return p.user }

// PasskeyName is the signing passkey's name ("iPhone").
func (p *Proof) PasskeyName() string { return p.name }

// RequestID is the request the signed content names.
func (p *Proof) RequestID() string { return p.requestID }

// Content is the signed content, as it was hashed.
func (p *Proof) Content() []byte { return p.content }

// The audit detail keys of a passkey-signed row.
const (
	KeyCredentialID = "passkey_credential_id"
	KeyAuthData     = "passkey_authenticator_data"
	KeyClientData   = "passkey_client_data_json"
	KeySignature    = "passkey_signature"
	KeyContentHash  = "content_hash"
	KeyNonce        = "challenge_nonce"
	KeyContent      = "content"
	KeyName         = "passkey_name"
	KeyUser         = "passkey_user"
	KeyRPID         = "passkey_rp_id"
)

// AuditDetail is what an audit row carries so that anyone with the export
// and the public keys can check the signature again.
func (p *Proof) AuditDetail() map[string]any {
	return map[string]any{
		KeyCredentialID: p.credentialID, KeyAuthData: b64(p.authData), KeyClientData: b64(p.clientData),
		KeySignature: b64(p.signature), KeyContentHash: p.contentHash, KeyNonce: b64(p.nonce),
		KeyContent: string(p.content), KeyName: p.name, KeyUser: p.user, KeyRPID: p.rpID,
	}
}

// BeginStepUp starts the assertion that lets web user name decide request
// requestID: the challenge commits to content (Content.JSON of the
// request and the decision) and a fresh 32-byte nonce, both stored with
// the ceremony; choice is stored as given, for FinishStepUp to return.
// Only name's passkeys may answer.
func (s *Store) BeginStepUp(ctx context.Context, rp RP, name, requestID, choice string, content []byte) (Begun, error) {
	u, err := s.userOf(ctx, name)
	if err != nil {
		return Begun{}, err
	}
	if len(u.keys) == 0 {
		return Begun{}, fmt.Errorf("%w: %s has no passkey; add one on the Account page", ErrNotFound, name)
	}
	wa, err := rp.webauthn()
	if err != nil {
		return Begun{}, err
	}
	nonce := randomBytes(NonceSize)
	challenge := Challenge(ContentHash(content), nonce)
	opts, sess, err := wa.BeginLogin(u, webauthn.WithChallenge(challenge),
		webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return Begun{}, fmt.Errorf("passkey step-up: %w", err)
	}
	id, err := s.begin(ctx, ceremony{Purpose: purposeStepUp, User: name, RequestID: requestID, Choice: choice,
		Content: content, Nonce: nonce, Session: *sess})
	if err != nil {
		return Begun{}, err
	}
	return begun(id, opts)
}

// FinishStepUp checks the assertion answering ceremony id of web user
// name and returns the proof with the request and choice the ceremony was
// begun for. The ceremony is spent whatever the outcome.
func (s *Store) FinishStepUp(ctx context.Context, rp RP, name, id string, credential []byte) (p *Proof, requestID, choice string, err error) {
	c, err := s.take(ctx, id, purposeStepUp, name)
	if err != nil {
		return nil, "", "", err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return nil, "", "", fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	u, err := s.userOf(ctx, name)
	if err != nil {
		return nil, "", "", err
	}
	key, ok := u.key(parsed.RawID)
	if !ok {
		return nil, "", "", fmt.Errorf("%w: not a passkey of %s", ErrRefused, name)
	}
	wa, err := rp.webauthn()
	if err != nil {
		return nil, "", "", err
	}
	if _, err := wa.ValidateLogin(u, c.Session, parsed); err != nil {
		return nil, "", "", fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	hash := ContentHash(c.Content)
	signed, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parsed.Response.CollectedClientData.Challenge, "="))
	if err != nil || !bytes.Equal(signed, Challenge(hash, c.Nonce)) {
		return nil, "", "", fmt.Errorf("%w: the signed challenge is not this request's", ErrRefused)
	}
	if err := s.used(ctx, key, parsed.Response.AuthenticatorData.Counter); err != nil {
		return nil, "", "", err
	}
	raw := parsed.Raw.AssertionResponse
	return &Proof{user: name, name: key.Name, credentialID: key.CredentialID, requestID: c.RequestID, rpID: rp.ID,
		content: c.Content, contentHash: hash, nonce: c.Nonce, authData: raw.AuthenticatorData,
		clientData: raw.ClientDataJSON, signature: raw.Signature}, c.RequestID, c.Choice, nil
}
