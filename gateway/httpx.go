package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/internal/httpjson"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// apiError is the body of every error answer: a stable code for programs and
// a message for people that names the field at fault.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Request *approvals.Request `json:"request,omitempty"` // on 409: the finished, or the earlier, request
	// CallID names the call_id of a 409 call_id_conflict.
	CallID string `json:"call_id,omitempty"`
}

// The answers' JSON (package httpjson, the web page's too).
var (
	writeJSON  = httpjson.Write
	writeError = httpjson.Error
	cleanMsg   = httpjson.CleanMsg
)

// writeRequest is writeJSON for a request, which it does not copy into an
// interface (a heap copy of the whole Request per answer).
func writeRequest(w http.ResponseWriter, status int, r *approvals.Request) {
	httpjson.SetContentType(w)
	w.WriteHeader(status)
	httpjson.WriteAppended(w, r.AppendJSON)
}

// unavailableRetrySeconds is the Retry-After of a 503 unavailable: the
// expiry sweep finds the database back within a second of its return.
const unavailableRetrySeconds = 2

// errorResponse is the one place a domain error becomes an HTTP answer.
// Internal details are logged, never shown.
func (s *Server) errorResponse(w http.ResponseWriter, r *http.Request, err error) {
	var already *approvals.AlreadyDecidedError
	var counted *approvals.AlreadyCountedError
	var fe *policy.FieldError
	var limited *rateLimitError
	var conflict *approvals.CallIDConflictError
	var tooManyPending *approvals.TooManyPendingError
	var tooManyStreams *tooManyStreamsError
	var tooManyChildren *policy.TooManyChildrenError
	switch {
	case errors.As(err, &tooManyChildren):
		writeError(w, http.StatusTooManyRequests, "too_many_children", tooManyChildren.Error())
	case errors.As(err, &tooManyPending):
		writeError(w, http.StatusTooManyRequests, "too_many_pending", tooManyPending.Error())
	case errors.As(err, &tooManyStreams):
		writeError(w, http.StatusTooManyRequests, "too_many_streams", tooManyStreams.Error())
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", strconv.Itoa(limited.retrySeconds()))
		writeError(w, http.StatusTooManyRequests, "rate_limited", limited.Error())
	case errors.As(err, &conflict):
		writeJSON(w, http.StatusConflict, callIDConflictBody(conflict))
	case errors.As(err, &already):
		writeJSON(w, http.StatusConflict, requestConflict("already_decided", already.Error(), already.Request))
	case errors.Is(err, policy.ErrRuleFromConfig):
		writeError(w, http.StatusConflict, "rule_from_config", cleanMsg(err))
	case errors.Is(err, policy.ErrTokenExhausted):
		writeError(w, http.StatusForbidden, "token_exhausted", "this token has made its max_requests")
	case errors.Is(err, policy.ErrTokenRevoked):
		writeError(w, http.StatusUnauthorized, "unauthorized", "the token (or one it was made from) was revoked or expired")
	case errors.As(err, &counted):
		writeJSON(w, http.StatusConflict, requestConflict("already_counted", counted.Error(), counted.Request))
	case errors.Is(err, approvals.ErrNotApprover):
		writeError(w, http.StatusForbidden, "not_approver", "not an approver for this request (its route names who may decide)")
	case errors.Is(err, approvals.ErrStepUpRequired):
		writeError(w, http.StatusForbidden, "step_up_required",
			"this request's route asks for a passkey: allow it on the web page (/r/{id}); deny works here")
	case errors.Is(err, approvals.ErrOwnRequest):
		writeError(w, http.StatusForbidden, "own_request",
			"an agent may not decide a request it or its child tokens made; a person decides it")
	case errors.Is(err, errPolicyStepUp):
		writeError(w, http.StatusForbidden, "step_up_required",
			"[web] policy_step_up is on: an admin adds approve rules and grants on the web page, with a passkey")
	case errors.Is(err, errForeignPrincipal):
		writeError(w, http.StatusForbidden, "forbidden_principal", err.Error())
	case errors.Is(err, approvals.ErrNotFound), errors.Is(err, policy.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "not found")
	case errors.Is(err, approvals.ErrAllowAlwaysRefused), errors.Is(err, policy.ErrGrantNotAllowed):
		writeError(w, http.StatusBadRequest, "allow_always_refused", cleanMsg(err))
	case errors.Is(err, approvals.ErrNotOffered):
		writeError(w, http.StatusBadRequest, "not_offered", cleanMsg(err))
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, "invalid_"+fe.Field, fe.Error())
	case errors.Is(err, approvals.ErrInvalid), errors.Is(err, policy.ErrInvalid), errors.Is(err, policy.ErrUnknownCapability),
		errors.Is(err, policy.ErrBadTarget):
		writeError(w, http.StatusBadRequest, "invalid_request", cleanMsg(err))
	case errors.Is(err, context.Canceled):
		// The client went away; nothing to answer.
	case storage.Unavailable(err):
		// The database is down or held: the same call may work in a moment.
		// The expiry sweep logs the outage, once; not every call.
		s.log.Debug("database unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(unavailableRetrySeconds))
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the database cannot be reached; retry later")
	default:
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error; see the gateway log")
	}
}

// callIDConflictBody is the 409 of a reused call_id: the code, a message
// naming call_id and the fields that differ, and the earlier request.
func callIDConflictBody(c *approvals.CallIDConflictError) apiError {
	e := requestConflict("call_id_conflict", c.Error(), c.Earlier)
	e.CallID = c.CallID
	return e
}

// requestConflict is the body of a 409 about a request: the error and the
// request itself (finished, or the earlier one).
func requestConflict(code, msg string, req approvals.Request) apiError {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	e.Request = &req
	return e
}

// parseWait reads ?wait= (duration.ParseWait), bounded by MaxWait.
func parseWait(r *http.Request) (time.Duration, error) {
	if r.URL.RawQuery == "" { // most requests: Query would allocate an empty map
		return 0, nil
	}
	v := r.URL.Query().Get("wait")
	if v == "" {
		return 0, nil
	}
	d, err := duration.ParseWait(v)
	if err != nil {
		return 0, fmt.Errorf("wait: %w", err)
	}
	return min(d, MaxWait), nil
}

type ctxKey int

const agentKey ctxKey = iota

func agentFrom(r *http.Request) *Agent {
	a, _ := r.Context().Value(agentKey).(*Agent)
	return a
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// requireAgent authenticates the bearer token of an agent.
func (s *Server) requireAgent(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		a := s.AgentByToken(tok)
		if a == nil {
			var err error
			if a, err = s.childAgent(r.Context(), tok); err != nil {
				s.log.Error("authenticate a child token", "err", err)
				writeError(w, http.StatusServiceUnavailable, "unavailable", "the token could not be checked; try again")
				return
			}
		}
		if a == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gateway"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or bad bearer token")
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), agentKey, a)))
	})
}

// requireAdmin is requireAgent for agents with admin = true.
func (s *Server) requireAdmin(h http.HandlerFunc) http.Handler {
	return s.requireAgent(func(w http.ResponseWriter, r *http.Request) {
		if !agentFrom(r).Admin {
			writeError(w, http.StatusForbidden, "forbidden", "this endpoint needs an admin agent")
			return
		}
		h(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush lets SSE flush through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// logRequests logs each request at debug level (never headers or bodies:
// they hold tokens and argument values); with debug off it adds nothing.
func (s *Server) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Asked first, as Debug would (under context.Background): the
		// arguments of a line not written, and the recorder of its status,
		// were allocated on every request.
		if !s.log.Enabled(context.Background(), slog.LevelDebug) {
			h.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		s.log.Debug("http", "method", r.Method, "path", logPath(r.URL.Path), "status", rec.status,
			"duration_ms", time.Since(start).Milliseconds())
	})
}

// logPath is a request's path as the log may show it: a one-time login
// link's token (GET /login/{token}) is a credential, and never written.
func logPath(p string) string {
	if rest, ok := strings.CutPrefix(p, "/login/"); ok && rest != "passkey" && rest != "passkey/begin" {
		return "/login/(token)"
	}
	return p
}

func (s *Server) recoverPanics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, http.StatusInternalServerError, "internal", "internal error; see the gateway log")
			}
		}()
		h.ServeHTTP(w, r)
	})
}
