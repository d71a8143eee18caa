// What a failed call returns: the API's error with its code, the
// call_id conflict, and the gateway out of reach.

package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrUnreachable is wrapped by every error where the gateway could not be
// reached or did not answer (connection refused, timeout, connection cut).
// Errors the gateway answered are *APIError instead.
var ErrUnreachable = errors.New("gateway unreachable")

// APIError is an error the gateway answered:
// {"error":{"code","message"}} with its HTTP status.
type APIError struct {
	StatusCode int    // 400, 401, 403, 404, 409, 413, 429, 5xx
	Code       string // stable: "invalid_capability", "not_found", "already_decided", "rate_limited", …
	Message    string // for people; names the field at fault
	// RetryAfter is the server's Retry-After on a 429, else 0.
	RetryAfter time.Duration
	// Request is the finished request on a 409 already_decided (who
	// decided first, and how), or the earlier request on a 409
	// call_id_conflict.
	Request *Request
	// CallID is the reused call_id of a 409 call_id_conflict.
	CallID string
}

// Error reads "gateway: <message> (<status> <code>)"; it never holds the token.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	return fmt.Sprintf("gateway: %s (%d %s)", msg, e.StatusCode, e.Code)
}

// ErrCallIDConflict is matched (errors.Is) by a *CallIDConflictError.
var ErrCallIDConflict = errors.New("call_id conflict")

// CallIDConflictError is the gateway's 409 call_id_conflict: the CallID
// was used before by this agent for a different call (another capability,
// target, grant_target, autonomy, principal or set of arg keys). Nothing
// was stored. Earlier is that call's request; a new call needs a new
// call_id. errors.As also finds the underlying *APIError.
type CallIDConflictError struct {
	CallID  string
	Earlier Request
	API     *APIError
}

func (e *CallIDConflictError) Error() string { return e.API.Error() }

// Unwrap returns the *APIError.
func (e *CallIDConflictError) Unwrap() error { return e.API }

// Is makes errors.Is(err, ErrCallIDConflict) true.
func (e *CallIDConflictError) Is(target error) bool { return target == ErrCallIDConflict }

// typedError returns the typed form of an answered error where there is
// one (a *CallIDConflictError), else e itself.
func typedError(e *APIError) error {
	if e.StatusCode == http.StatusConflict && e.Code == "call_id_conflict" {
		c := &CallIDConflictError{CallID: e.CallID, API: e}
		if e.Request != nil {
			c.Earlier = *e.Request
		}
		return c
	}
	return e
}

func apiError(resp *http.Response, b []byte) *APIError {
	e := &APIError{StatusCode: resp.StatusCode}
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Request json.RawMessage `json:"request"`
		CallID  string          `json:"call_id"`
	}
	if json.Unmarshal(b, &body) == nil {
		e.Code, e.Message, e.CallID = body.Error.Code, body.Error.Message, body.CallID
		if len(body.Request) > 0 && string(body.Request) != "null" {
			var r Request
			if decode(body.Request, &r) == nil {
				e.Request = &r
			}
		}
	}
	if e.Code == "" {
		e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "_"))
	}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs >= 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}
