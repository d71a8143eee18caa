package passkeys

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-webauthn/webauthn/protocol/webauthncose"
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

// VerifyRow checks a passkey-signed audit row offline, with the public
// key of the passkey it names (removed ones too): the content hashes to
// content_hash, the client data is a webauthn.get whose challenge is
// sha256(content_hash || nonce), the authenticator saw the user present
// and verified, and the signature over authenticator data and the client
// data's hash verifies with the stored key. requestID is the row's
// request, which the content must name. nil means the signature holds.
func (s *Store) VerifyRow(ctx context.Context, requestID string, detail map[string]any) error {
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
		return err
	}
	content, err := str(KeyContent)
	if err != nil {
		return err
	}
	hash, err := str(KeyContentHash)
	if err != nil {
		return err
	}
	var fields struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(content), &fields); err != nil || fields.ID != requestID {
		return fmt.Errorf("the content does not name request %s", requestID)
	}
	if ContentHash([]byte(content)) != hash {
		return errors.New("content_hash is not the SHA-256 of the content")
	}
	nonce, err := bin(KeyNonce)
	if err != nil {
		return err
	}
	if len(nonce) != NonceSize {
		return fmt.Errorf("challenge_nonce is %d bytes, want %d", len(nonce), NonceSize)
	}
	authData, err := bin(KeyAuthData)
	if err != nil {
		return err
	}
	clientData, err := bin(KeyClientData)
	if err != nil {
		return err
	}
	sig, err := bin(KeySignature)
	if err != nil {
		return err
	}
	var cd struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(clientData, &cd); err != nil {
		return errors.New("the client data is not JSON")
	}
	if cd.Type != "webauthn.get" {
		return fmt.Errorf("the client data is a %q, not an assertion", cd.Type)
	}
	signed, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(cd.Challenge, "="))
	if err != nil || !bytes.Equal(signed, Challenge(hash, nonce)) {
		return errors.New("the signed challenge is not sha256(content_hash || nonce)")
	}
	if len(authData) < 37 {
		return errors.New("the authenticator data is too short")
	}
	if flags := authData[32]; flags&flagUserPresent == 0 || flags&flagUserVerified == 0 {
		return errors.New("the authenticator did not verify the user")
	}
	key, err := s.ByCredentialID(ctx, credID)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("no stored public key for passkey %s", credID)
	}
	if err != nil {
		return err
	}
	pub, err := webauthncose.ParsePublicKey(key.PublicKey)
	if err != nil {
		return fmt.Errorf("the stored public key of passkey %s does not parse: %v", credID, err)
	}
	cdHash := sha256.Sum256(clientData)
	ok, err := webauthncose.VerifySignature(pub, append(append([]byte(nil), authData...), cdHash[:]...), sig)
	if err != nil || !ok {
		return errors.New("the signature does not verify with the stored public key")
	}
	return nil
}
