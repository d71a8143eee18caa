package cards

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/metnos/gateway/approvals"
)

// MaxCallbackData is Telegram's limit on callback_data, in bytes.
const MaxCallbackData = 64

// ErrBadCallback is returned for callback data that is not ours: wrong
// version, unknown verb, malformed id. It is untrusted input from a chat.
var ErrBadCallback = errors.New("malformed callback data")

// Callback is decoded callback data: either a decision on a request or a
// revoke of a grant.
type Callback struct {
	Decision  approvals.Decision // set for decisions
	RequestID string
	GrantID   int64 // set for revokes
}

// Revoke reports whether the callback revokes a grant.
func (c Callback) Revoke() bool { return c.GrantID != 0 }

var decisionCodes = map[approvals.Decision]string{approvals.AllowOnce: "o", approvals.AllowAlways: "a", approvals.Deny: "d"}

// EncodeDecision is the callback data of a decision button: "v1:o:<id>".
func EncodeDecision(requestID string, d approvals.Decision) string {
	return "v1:" + decisionCodes[d] + ":" + requestID
}

// EncodeRevoke is the callback data of a grant's Revoke button: "v1:r:<id>".
func EncodeRevoke(grantID int64) string { return "v1:r:" + strconv.FormatInt(grantID, 10) }

// Decode parses callback data strictly.
func Decode(data string) (Callback, error) {
	if len(data) > MaxCallbackData {
		return Callback{}, fmt.Errorf("%w: over %d bytes", ErrBadCallback, MaxCallbackData)
	}
	parts := strings.Split(data, ":")
	if len(parts) != 3 || parts[0] != "v1" {
		return Callback{}, ErrBadCallback
	}
	verb, arg := parts[1], parts[2]
	if verb == "r" {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id <= 0 || strconv.FormatInt(id, 10) != arg { // one spelling: not "07" or "+7"
			return Callback{}, fmt.Errorf("%w: bad grant id", ErrBadCallback)
		}
		return Callback{GrantID: id}, nil
	}
	if !validRequestID(arg) {
		return Callback{}, fmt.Errorf("%w: bad request id", ErrBadCallback)
	}
	for d, code := range decisionCodes {
		if code == verb {
			return Callback{Decision: d, RequestID: arg}, nil
		}
	}
	return Callback{}, fmt.Errorf("%w: unknown verb", ErrBadCallback)
}

// validRequestID: request ids are "r" + lower-case base32 (see approvals).
func validRequestID(id string) bool {
	if len(id) < 2 || len(id) > 40 || id[0] != 'r' {
		return false
	}
	for _, c := range id[1:] {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
