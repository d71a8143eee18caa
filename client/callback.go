package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// SignatureHeader carries the signature of a callback body:
// "sha256=" + hex(HMAC-SHA256(body, agent token)).
const SignatureHeader = "X-Gateway-Signature"

// maxCallbackBytes bounds a callback body; the gateway's are a few hundred bytes.
const maxCallbackBytes = 64 << 10

// ErrBadSignature is returned by ParseCallback for a body whose
// X-Gateway-Signature does not match: it did not come from the gateway,
// or was changed on the way.
var ErrBadSignature = errors.New("callback signature does not match")

// Callback is what the gateway POSTs to a request's callback_url when the
// request is resolved. It is the shape an agent server's approve endpoint
// takes as it is: Command is the request's target (for code:exec, the
// shell command), Decision is AllowOnce, AllowAlways, Deny or "" (expired,
// cancelled, or decided by policy).
type Callback struct {
	ID       string `json:"id"`
	CallID   string `json:"call_id"`
	Command  string `json:"command"`
	Decision string `json:"decision"`
	Status   Status `json:"status"`
}

// Allowed reports whether the call may go ahead.
func (c Callback) Allowed() bool { return c.Status == StatusAllowed }

// VerifyCallback checks the X-Gateway-Signature header of a callback
// against its raw body, in constant time. token is the agent's token: the
// gateway signs each agent's callbacks with that agent's token.
func VerifyCallback(token string, body []byte, header string) bool {
	m := hmac.New(sha256.New, []byte(token))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	return hmac.Equal([]byte(want), []byte(header))
}

// ParseCallback reads a callback request, checks its signature over the
// raw body, and decodes it. Answer 2xx once it returns nil: the gateway
// retries with backoff until it gets one, so a handler may see the same
// callback twice and should treat it as idempotent (key on ID).
func ParseCallback(token string, r *http.Request) (Callback, error) {
	var cb Callback
	body, err := io.ReadAll(io.LimitReader(r.Body, maxCallbackBytes+1))
	if err != nil {
		return cb, fmt.Errorf("read callback: %w", err)
	}
	if len(body) > maxCallbackBytes {
		return cb, fmt.Errorf("callback body over %d bytes", maxCallbackBytes)
	}
	if !VerifyCallback(token, body, r.Header.Get(SignatureHeader)) {
		return cb, ErrBadSignature
	}
	if err := json.Unmarshal(body, &cb); err != nil {
		return cb, fmt.Errorf("decode callback: %w", err)
	}
	return cb, nil
}
