package passkeys

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Content is what a step-up allow signs: the request as its card showed
// it, the decision, and the grant the decision writes (its scope, the
// while of Allow for, the session of Allow this session, and the agent it
// is for). Its JSON (Content.JSON), in this field order, is hashed into
// the WebAuthn challenge, so the signature commits to exactly this.
//
// Version 1 (rows signed before the grant's fields were added) ended at
// decision and had no "v"; such rows still verify, and VerifyRow says
// that their grant was not signed (Check.Note).
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
	// Scope is the target of the grant the decision writes ("" when it
	// writes none).
	Scope string `json:"scope"`
	// For is the while of Allow for ("1h"), else "".
	For string `json:"for"`
	// SessionID is the session of Allow this session, else "".
	SessionID string `json:"session_id"`
	// GrantAgent is the agent the grant is for: an agent's name, AnyAgent
	// for a grant of the principal for every agent, "" when no grant is
	// written.
	GrantAgent string `json:"grant_agent"`
	// V is the content's version: JSON always writes ContentVersion.
	V int `json:"v"`
}

// ContentVersion is the version of Content JSON writes.
const ContentVersion = 2

// AnyAgent is Content.GrantAgent of a grant that covers every agent of
// the principal.
const AnyAgent = "*"

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
	c.V = ContentVersion
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
