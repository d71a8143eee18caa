package cards

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
)

// MaxCallbackData is the bytes a button's data may hold: the smallest
// limit among the messengers' (a Bot API callback_data).
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
	// Scope is, for Allow always, the index of the chosen scope in the
	// request's Scopes plus one (0: the request's default scope, the
	// data of cards posted before scopes).
	Scope int
	// For is, for Allow for, the chosen while.
	For time.Duration
	// Menu opens a card's scope keyboard, Back closes it: they decide
	// nothing.
	Menu, Back bool
	// EveryAgent: with Menu, the keyboard of the same scopes for every
	// agent of the principal; with Scope, Allow always writes the grant
	// for every agent (approvals.Choice.EveryAgent), never the default.
	EveryAgent bool
}

// Revoke reports whether the callback revokes a grant.
func (c Callback) Revoke() bool { return c.GrantID != 0 }

var decisionCodes = map[approvals.Decision]string{approvals.AllowOnce: "o", approvals.AllowAlways: "a",
	approvals.AllowSession: "s", approvals.Deny: "d"}

// EncodeDecision is the callback data of a decision button: "v1:o:<id>".
func EncodeDecision(requestID string, d approvals.Decision) string {
	return "v1:" + decisionCodes[d] + ":" + requestID
}

// EncodeScope is the callback data of a scope button of the Allow always
// keyboard: "v1:a<i>:<id>", i the scope's index in the request's Scopes.
func EncodeScope(requestID string, i int) string {
	return "v1:a" + strconv.Itoa(i) + ":" + requestID
}

// EncodeAllowFor is the callback data of an Allow for button: the while
// in whole seconds, "v1:f3600:<id>" (the button's own while, checked
// against the request's list when tapped, never an index into a config
// that may have changed since).
func EncodeAllowFor(requestID string, d time.Duration) string {
	return "v1:f" + strconv.FormatInt(int64(d/time.Second), 10) + ":" + requestID
}

// EncodeEveryMenu opens the keyboard of the scopes for every agent:
// "v1:e:<id>".
func EncodeEveryMenu(requestID string) string { return "v1:e:" + requestID }

// EncodeEveryScope is the callback data of a scope button of that
// keyboard: "v1:e<i>:<id>", Allow always for every agent of the principal.
func EncodeEveryScope(requestID string, i int) string {
	return "v1:e" + strconv.Itoa(i) + ":" + requestID
}

// EncodeMenu and EncodeBack open and close the scope keyboard of a card.
func EncodeMenu(requestID string) string { return "v1:m:" + requestID }

// EncodeBack: see EncodeMenu.
func EncodeBack(requestID string) string { return "v1:b:" + requestID }

// MaxScopes bounds a scope index in callback data.
const MaxScopes = 100

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
	if !ValidRequestID(arg) {
		return Callback{}, fmt.Errorf("%w: bad request id", ErrBadCallback)
	}
	switch {
	case verb == "m":
		return Callback{Menu: true, RequestID: arg}, nil
	case verb == "b":
		return Callback{Back: true, RequestID: arg}, nil
	case verb == "e":
		return Callback{Menu: true, EveryAgent: true, RequestID: arg}, nil
	case len(verb) > 1 && verb[0] == 'e':
		i, ok := StrictNat(verb[1:])
		if !ok || i >= MaxScopes {
			return Callback{}, fmt.Errorf("%w: bad scope", ErrBadCallback)
		}
		return Callback{Decision: approvals.AllowAlways, RequestID: arg, Scope: int(i) + 1, EveryAgent: true}, nil
	case len(verb) > 1 && verb[0] == 'a':
		i, ok := StrictNat(verb[1:])
		if !ok || i >= MaxScopes {
			return Callback{}, fmt.Errorf("%w: bad scope", ErrBadCallback)
		}
		return Callback{Decision: approvals.AllowAlways, RequestID: arg, Scope: int(i) + 1}, nil
	case len(verb) > 1 && verb[0] == 'f':
		n, ok := StrictNat(verb[1:])
		if !ok || n == 0 || n > int64(MaxWhile/time.Second) {
			return Callback{}, fmt.Errorf("%w: bad while", ErrBadCallback)
		}
		return Callback{Decision: approvals.AllowFor, RequestID: arg, For: time.Duration(n) * time.Second}, nil
	}
	for d, code := range decisionCodes {
		if code == verb {
			return Callback{Decision: d, RequestID: arg}, nil
		}
	}
	return Callback{}, fmt.Errorf("%w: unknown verb", ErrBadCallback)
}

// MaxWhile bounds the while of Allow for in callback data (a year).
const MaxWhile = 8760 * time.Hour

// StrictNat reads a decimal number in its one spelling: no sign, no
// leading zero (but "0"), at most 12 digits.
func StrictNat(s string) (int64, bool) {
	if s == "" || len(s) > 12 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0 && strconv.FormatInt(n, 10) == s
}

// ValidRequestID: request ids are "r" + lower-case base32 (see approvals).
func ValidRequestID(id string) bool {
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
