package passkeys

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Content is what a step-up allow signs: the request as its card showed
// it, and the decision. Its JSON (Content.JSON), in this field order, is
// hashed into the WebAuthn challenge, so the signature commits to exactly
// this.
type Content struct {
	ID          string   `json:"id"`
	Agent       string   `json:"agent"`
	Capability  string   `json:"capability"`
	Target      string   `json:"target"`
	GrantTarget string   `json:"grant_target"`
	Autonomy    string   `json:"autonomy"`
	ArgKeys     []string `json:"arg_keys"`
	Channel     string   `json:"channel"`
	SenderID    string   `json:"sender_id"`
	ExpiresAt   string   `json:"expires_at"` // ContentTime of the request's expiry
	Decision    string   `json:"decision"`
}

// ContentTime is how Content writes a time: RFC 3339 in UTC.
func ContentTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// JSON is the signed content: the compact JSON object json.Marshal writes,
// arg_keys sorted (never null).
func (c Content) JSON() []byte {
	c.ArgKeys = slices.Clone(c.ArgKeys)
	if c.ArgKeys == nil {
		c.ArgKeys = []string{}
	}
	slices.Sort(c.ArgKeys)
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings only: json.Marshal cannot fail
	}
	return b
}

// ContentHash is the lowercase hex SHA-256 of content.
func ContentHash(content []byte) string {
	h := sha256.Sum256(content)
	return hex.EncodeToString(h[:])
}

// NonceSize is the length of a step-up challenge's server nonce.
const NonceSize = 32

// Challenge is the WebAuthn challenge of a step-up: the SHA-256 of the
// ASCII content hash followed by the nonce.
func Challenge(contentHash string, nonce []byte) []byte {
	h := sha256.New()
	h.Write([]byte(contentHash))
	h.Write(nonce)
	return h.Sum(nil)
}
