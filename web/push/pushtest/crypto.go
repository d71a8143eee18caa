package pushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// verifyVAPID checks "vapid t=<JWT>, k=<key>" (RFC 8292 §3): k is the
// key the device subscribed with, the JWT is ES256-signed by it, its aud
// is this service's origin, exp is in the future and within 24 hours, and
// sub is a mailto: or https: contact. It returns sub, or why it refused.
func (s *Server) verifyVAPID(h, appKey string) (string, string) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return "", "Authorization is not a vapid scheme"
	}
	var t, k string
	for _, part := range strings.Split(rest, ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch name {
		case "t":
			t = val
		case "k":
			k = val
		}
	}
	if k == "" || k != strings.TrimRight(appKey, "=") {
		return "", "vapid k is not the applicationServerKey of the subscription"
	}
	kb, err := base64.RawURLEncoding.DecodeString(k)
	if err != nil || len(kb) != 65 || kb[0] != 4 {
		return "", "vapid k is not an uncompressed P-256 point"
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), kb)
	if err != nil {
		return "", "vapid k is not a P-256 point"
	}
	parts := strings.Split(t, ".")
	if len(parts) != 3 {
		return "", "vapid t is not a JWT"
	}
	var hdr struct{ Alg, Typ string }
	if err := decodeSegment(parts[0], &hdr); err != nil || hdr.Alg != "ES256" {
		return "", "vapid JWT header is not ES256"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return "", "vapid JWT signature is not 64 bytes"
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", "vapid JWT signature does not verify"
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return "", "vapid JWT claims unreadable"
	}
	now := s.now()
	switch {
	case claims.Aud != s.URL:
		return "", fmt.Sprintf("vapid aud %q is not %q", claims.Aud, s.URL)
	case claims.Exp <= now.Unix() || claims.Exp > now.Add(24*time.Hour).Unix():
		return "", "vapid exp is past or more than 24 hours away"
	case !strings.HasPrefix(claims.Sub, "mailto:") && !strings.HasPrefix(claims.Sub, "https://"):
		return "", fmt.Sprintf("vapid sub %q is neither mailto: nor https:", claims.Sub)
	}
	return claims.Sub, ""
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// decrypt opens an aes128gcm body (RFC 8188) with the keys of RFC 8291:
// the header (salt, record size, the sender's ephemeral public key), then
// one record whose plaintext ends with the delimiter 0x02 and zeros.
func decrypt(d *Device, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen+16 {
		return nil, errors.New("keyid is not a P-256 public key")
	}
	asPub, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("keyid: %w", err)
	}
	ct := body[21+idlen:]
	if rs < 18 || uint32(len(ct)) > rs {
		return nil, fmt.Errorf("one record of %d bytes does not fit record size %d", len(ct), rs)
	}
	secret, err := d.priv.ECDH(asPub)
	if err != nil {
		return nil, err
	}
	info := append(append([]byte("WebPush: info\x00"), d.priv.PublicKey().Bytes()...), asPub.Bytes()...)
	ikm, err := hkdf.Key(sha256.New, secret, d.auth, string(info), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("does not decrypt with the subscription's keys: %w", err)
	}
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		return nil, errors.New("the last record does not end with the 0x02 delimiter")
	}
	return plain[:len(plain)-1], nil
}
