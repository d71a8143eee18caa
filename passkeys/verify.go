package passkeys

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/metnos/gateway/storage"
)

// Signed reports whether an audit row's detail carries a passkey
// signature (any of its fields: a row with some of them is checked, and
// fails, rather than skipped).
func Signed(detail map[string]any) bool {
	for _, k := range []string{KeyCredentialID, KeyAuthData, KeyClientData, KeySignature, KeyNonce} {
		if _, ok := detail[k]; ok {
			return true
		}
	}
	return false
}

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
)

// NoteV1 is what VerifyRow says of a row signed under content version 1,
// which did not yet sign the grant.
const NoteV1 = "signed under content version 1: the request and decision are signed, the grant's scope, while and agent are not"

// signedFields are the fields of the signed content that VerifyRow holds
// equal to the row's own.
type signedFields struct {
	ID         string  `json:"id"`
	Agent      string  `json:"agent"`
	Decision   string  `json:"decision"`
	Scope      *string `json:"scope"`
	For        *string `json:"for"`
	SessionID  *string `json:"session_id"`
	GrantAgent *string `json:"grant_agent"`
	V          int     `json:"v"`
}

// detailString is a row detail's string field ("" when absent).
func detailString(detail map[string]any, k string) string {
	s, _ := detail[k].(string)
	return s
}

// VerifyRow checks a passkey-signed audit row offline, from the stored
// data alone (the row, and the public key of the passkey it names, removed
// ones too): the content hashes to content_hash and names the row's
// request, agent and decision, and (content version 2) the grant the row
// says was written (scope, for, session_id, grant_agent); the passkey is
// the one of the web user the row names (passkey_user and its actor); the
// client data is a webauthn.get whose challenge is sha256(content_hash ||
// nonce), from an origin of the relying party whose id hash opens the
// authenticator data; the authenticator saw the user present and
// verified; and the signature over authenticator data and the client
// data's hash verifies with the stored key. err nil means all of this
// holds; note then says what a row of an older content version does not
// prove.
func (s *Store) VerifyRow(ctx context.Context, row storage.AuditEvent) (note string, err error) {
	detail := row.Detail
	str := func(k string) (string, error) {
		v, ok := detail[k].(string)
		if !ok || v == "" {
			return "", fmt.Errorf("%s missing", k)
		}
		return v, nil
	}
	bin := func(k string) ([]byte, error) {
		v, err := str(k)
		if err != nil {
			return nil, err
		}
		b, err := base64.RawURLEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%s is not base64url", k)
		}
		return b, nil
	}
	credID, err := str(KeyCredentialID)
	if err != nil {
		return "", err
	}
	content, err := str(KeyContent)
	if err != nil {
		return "", err
	}
	hash, err := str(KeyContentHash)
	if err != nil {
		return "", err
	}
	if ContentHash([]byte(content)) != hash {
		return "", errors.New("content_hash is not the SHA-256 of the content")
	}
	if note, err = matchRow(content, row); err != nil {
		return "", err
	}
	nonce, err := bin(KeyNonce)
	if err != nil {
		return "", err
	}
	if len(nonce) != NonceSize {
		return "", fmt.Errorf("challenge_nonce is %d bytes, want %d", len(nonce), NonceSize)
	}
	authData, err := bin(KeyAuthData)
	if err != nil {
		return "", err
	}
	clientData, err := bin(KeyClientData)
	if err != nil {
		return "", err
	}
	sig, err := bin(KeySignature)
	if err != nil {
		return "", err
	}
	var cd struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
		Origin    string `json:"origin"`
	}
	if err := json.Unmarshal(clientData, &cd); err != nil {
		return "", errors.New("the client data is not JSON")
	}
	if cd.Type != "webauthn.get" {
		return "", fmt.Errorf("the client data is a %q, not an assertion", cd.Type)
	}
	signed, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(cd.Challenge, "="))
	if err != nil || !bytes.Equal(signed, Challenge(hash, nonce)) {
		return "", errors.New("the signed challenge is not sha256(content_hash || nonce)")
	}
	if len(authData) < 37 {
		return "", errors.New("the authenticator data is too short")
	}
	if err := checkRP(detailString(detail, KeyRPID), cd.Origin, authData[:32]); err != nil {
		return "", err
	}
	if flags := authData[32]; flags&flagUserPresent == 0 || flags&flagUserVerified == 0 {
		return "", errors.New("the authenticator did not verify the user")
	}
	key, err := s.ByCredentialID(ctx, credID)
	if errors.Is(err, ErrNotFound) {
		return "", fmt.Errorf("no stored public key for passkey %s", credID)
	}
	if err != nil {
		return "", err
	}
	if user := detailString(detail, KeyUser); key.User != user || !actorIs(row.Actor, user) {
		return "", fmt.Errorf("passkey %s is %s's, but the row names %q (decided by %q)", credID, key.User, user, row.Actor)
	}
	pub, err := webauthncose.ParsePublicKey(key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("the stored public key of passkey %s does not parse: %v", credID, err)
	}
	cdHash := sha256.Sum256(clientData)
	ok, err := webauthncose.VerifySignature(pub, append(append([]byte(nil), authData...), cdHash[:]...), sig)
	if err != nil || !ok {
		return "", errors.New("the signature does not verify with the stored public key")
	}
	return note, nil
}

// actorIs reports whether an audit row's actor is web user name: "web:name".
func actorIs(actor, name string) bool {
	return name != "" && actor == "web:"+name
}

// matchRow holds the signed content to the row: the request, agent and
// decision it names, and (version 2) the grant the row says it wrote.
func matchRow(content string, row storage.AuditEvent) (note string, err error) {
	if c, ok := ParsePolicyChange([]byte(content)); ok {
		return "", matchPolicyRow(c, row) // an admin's signed rule or grant change
	}
	var f signedFields
	if err := json.Unmarshal([]byte(content), &f); err != nil {
		return "", errors.New("the content is not JSON")
	}
	if f.ID != row.RequestID {
		return "", fmt.Errorf("the content does not name request %s", row.RequestID)
	}
	if a, ok := row.Detail["agent"].(string); ok && a != f.Agent {
		return "", fmt.Errorf("the signed agent %q is not the row's %q", f.Agent, a)
	}
	if d := detailString(row.Detail, "decision"); d != f.Decision {
		return "", fmt.Errorf("the signed decision %q is not the row's %q", f.Decision, d)
	}
	switch f.V {
	case 0:
		if f.Scope != nil || f.For != nil || f.SessionID != nil || f.GrantAgent != nil {
			return "", errors.New("the content has grant fields but no version")
		}
		return NoteV1, nil
	case ContentVersion:
	default:
		return "", fmt.Errorf("the content's version %d is unknown", f.V)
	}
	for _, p := range []struct {
		key    string
		signed *string
	}{{"scope", f.Scope}, {"for", f.For}, {"session_id", f.SessionID}, {"grant_agent", f.GrantAgent}} {
		if p.signed == nil {
			return "", fmt.Errorf("the content has no %s", p.key)
		}
		if got := detailString(row.Detail, p.key); got != *p.signed {
			return "", fmt.Errorf("the signed %s %q is not the row's %q", p.key, *p.signed, got)
		}
	}
	return "", nil
}

// checkRP holds the assertion to its relying party: the client data's
// origin is a page of rpID (rows before passkey_rp_id was stored: the
// origin's host is the id), and the authenticator data opens with the
// SHA-256 of that id.
func checkRP(rpID, origin string, idHash []byte) error {
	u, err := url.Parse(origin)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("the client data's origin %q has no host", origin)
	}
	host := strings.ToLower(u.Hostname())
	if rpID == "" {
		rpID = host
	}
	if host != rpID && !strings.HasSuffix(host, "."+rpID) {
		return fmt.Errorf("the origin %s is not a page of the relying party %s", origin, rpID)
	}
	want := sha256.Sum256([]byte(rpID))
	if !bytes.Equal(idHash, want[:]) {
		return fmt.Errorf("the authenticator data's relying party id hash is not SHA-256(%q)", rpID)
	}
	return nil
}
