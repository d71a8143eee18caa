// Package passkeystest is a software WebAuthn authenticator for tests
// without a browser: it answers the options the gateway's passkey
// ceremonies send (the JSON of navigator.credentials) with the JSON a
// browser's PublicKeyCredential.toJSON() gives, signing with its own
// P-256 keys. It checks nothing the real ones check: it is a client for
// the server's tests, never a model of an authenticator's security.
package passkeystest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// Authenticator holds credentials as a platform authenticator does:
// resident, with user verification. Counter is the sign count its next
// assertion reports (Counter stays 0 when Synced, as synced passkeys say).
type Authenticator struct {
	Origin  string // the page's origin, put in the client data
	Counter uint32
	Synced  bool
	creds   []*credential
}

type credential struct {
	id, handle []byte
	rpID       string
	key        *ecdsa.PrivateKey
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func unb64(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

// Begun is what the gateway's begin endpoints answer.
type Begun struct {
	Ceremony string `json:"ceremony"`
	Options  struct {
		PublicKey json.RawMessage `json:"publicKey"`
	} `json:"options"`
}

// Create answers registration options with a new credential.
func (a *Authenticator) Create(b Begun) (string, error) {
	var o struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := json.Unmarshal(b.Options.PublicKey, &o); err != nil {
		return "", err
	}
	handle, err := unb64(o.User.ID)
	if err != nil {
		return "", fmt.Errorf("user.id: %w", err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	c := &credential{id: random(32), handle: handle, rpID: o.RP.ID, key: key}
	a.creds = append(a.creds, c)
	pub, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         1, XCoord: pad32(key.X.Bytes()), YCoord: pad32(key.Y.Bytes())})
	if err != nil {
		return "", err
	}
	auth := a.authData(o.RP.ID, 0x45) // UP, UV, AT
	auth = binary.BigEndian.AppendUint16(append(auth, make([]byte, 16)...), uint16(len(c.id)))
	auth = append(append(auth, c.id...), pub...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth})
	if err != nil {
		return "", err
	}
	cd := a.clientData("webauthn.create", o.Challenge)
	out, _ := json.Marshal(map[string]any{"id": b64(c.id), "rawId": b64(c.id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64(cd), "attestationObject": b64(att), "transports": []string{"internal"}}})
	return string(out), nil
}

// Get answers assertion options with the first credential they allow (any
// of this authenticator's for the relying party when they list none).
func (a *Authenticator) Get(b Begun) (string, error) {
	var o struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		Allow     []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
	}
	if err := json.Unmarshal(b.Options.PublicKey, &o); err != nil {
		return "", err
	}
	var c *credential
	for _, x := range a.creds {
		ok := len(o.Allow) == 0
		for _, al := range o.Allow {
			ok = ok || al.ID == b64(x.id)
		}
		if ok && x.rpID == o.RPID {
			c = x
			break
		}
	}
	if c == nil {
		return "", fmt.Errorf("no credential for %s", o.RPID)
	}
	return a.Sign(c.id, o.RPID, o.Challenge)
}

// Sign is an assertion of credential id over challenge (base64url), as
// Get makes it: a test may sign with any credential it holds.
func (a *Authenticator) Sign(id []byte, rpID, challenge string) (string, error) {
	var c *credential
	for _, x := range a.creds {
		if string(x.id) == string(id) {
			c = x
		}
	}
	if c == nil {
		return "", fmt.Errorf("no credential %s", b64(id))
	}
	if !a.Synced {
		a.Counter++
	}
	auth := a.authData(rpID, 0x05) // UP, UV
	cd := a.clientData("webauthn.get", challenge)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte(nil), auth...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, c.key, digest[:])
	if err != nil {
		return "", err
	}
	out, _ := json.Marshal(map[string]any{"id": b64(c.id), "rawId": b64(c.id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{"clientDataJSON": b64(cd), "authenticatorData": b64(auth), "signature": b64(sig),
			"userHandle": b64(c.handle)}})
	return string(out), nil
}

// Credentials are the ids of the credentials held.
func (a *Authenticator) Credentials() [][]byte {
	var out [][]byte
	for _, c := range a.creds {
		out = append(out, c.id)
	}
	return out
}

// Clone is another authenticator holding copies of a's credentials (a
// cloned key), with its own counter.
func (a *Authenticator) Clone() *Authenticator {
	return &Authenticator{Origin: a.Origin, creds: append([]*credential(nil), a.creds...)}
}

func (a *Authenticator) authData(rpID string, flags byte) []byte {
	rp := sha256.Sum256([]byte(rpID))
	return binary.BigEndian.AppendUint32(append(rp[:], flags), a.Counter)
}

func (a *Authenticator) clientData(typ, challenge string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	return b
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func pad32(b []byte) []byte { return append(make([]byte, 32-len(b)), b...) }
