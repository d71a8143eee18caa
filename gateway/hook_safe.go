package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"

	"github.com/metnos/gateway/hooks"
)

// internalDeny is the reason an agent reads when its hook endpoint failed
// inside: the call is blocked, never let through.
const internalDeny = "approval gateway: internal error (see the gateway log); the call is blocked. Ask the user to approve it and try again."

// hookSafe wraps a hook endpoint (POST /v1/hooks/NAME) so that it never
// answers 5xx: Claude Code's http hook treats a 5xx (or a dropped
// connection) as a non-blocking error and runs the tool. A panic, or a
// status of 500 and above from anything inside (the token lookup's 503
// when the database is away), is logged and answered 200 with the
// adapter's deny for the event.
func (s *Server) hookSafe(ad hooks.Adapter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// What the handler reads of the event is kept, to write the deny
		// in the event's own shape (Codex answers a PermissionRequest
		// differently from a PreToolUse); nothing is read before the
		// token is checked.
		var seen bytes.Buffer
		body := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(io.LimitReader(body, hooks.MaxEventBytes+1), &seen), body}
		hw := &hookWriter{ResponseWriter: w}
		defer func() {
			p := recover()
			if p == http.ErrAbortHandler {
				panic(p)
			}
			if p != nil {
				s.log.Error("hook: panic", "hook", ad.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			if hw.failed != 0 {
				s.log.Error("hook: internal error answered with a deny", "hook", ad.Name, "status", hw.failed)
			}
			if (p != nil || hw.failed != 0) && !hw.wrote {
				_, _ = io.Copy(io.Discard, r.Body) // the rest of the event, when the handler failed before reading it
				ev, _ := ad.Decode(seen.Bytes())
				writeJSON(w, http.StatusOK, ad.Answer(ev, hooks.Verdict{Decision: hooks.Deny, Reason: internalDeny}).Body)
			}
		}()
		h.ServeHTTP(hw, r)
	})
}

// hookWriter holds back an answer of 500 and above (failed is its
// status) so that hookSafe can answer the deny instead.
type hookWriter struct {
	http.ResponseWriter
	failed int  // the 5xx status held back, 0 if none
	wrote  bool // headers went out
}

func (w *hookWriter) WriteHeader(code int) {
	if w.wrote || w.failed != 0 {
		return
	}
	if code >= http.StatusInternalServerError {
		w.failed = code
		return
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *hookWriter) Write(b []byte) (int, error) {
	if w.failed != 0 {
		return len(b), nil // the 5xx body: dropped, the deny goes instead
	}
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *hookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
