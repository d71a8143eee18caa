package gateway

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/hooks"
)

// TestHookSafe_InternalErrorDenies: a panic or a 5xx inside a hook
// endpoint is answered 200 with the agent's own deny, and logged.
func TestHookSafe_InternalErrorDenies(t *testing.T) {
	codexPerm := `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`
	cases := []struct {
		name    string
		ad      hooks.Adapter
		event   string
		handler http.HandlerFunc
		want    string // a piece of the answer
	}{
		{"panic, claude code", hooks.ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
			func(http.ResponseWriter, *http.Request) { panic("index out of range [0] with length 0") }, `"permissionDecision":"deny"`},
		{"503, claude code", hooks.ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`,
			func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, http.StatusServiceUnavailable, "unavailable", "the token could not be checked; try again")
			}, `"permissionDecision":"deny"`},
		{"500, codex permission request", hooks.Codex, codexPerm,
			func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }, `"behavior":"deny"`},
		{"panic, gemini", hooks.Gemini, `{"hook_event_name":"BeforeTool","tool_name":"read_file"}`,
			func(http.ResponseWriter, *http.Request) { panic("boom") }, `"decision":"deny"`},
		{"panic, not an event", hooks.ClaudeCode, `{`,
			func(http.ResponseWriter, *http.Request) { panic("boom") }, `"permissionDecision":"deny"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
			rec := httptest.NewRecorder()
			s.hookSafe(tc.ad, tc.handler).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/hooks/"+tc.ad.Name, strings.NewReader(tc.event)))
			body := rec.Body.String()
			if rec.Code != http.StatusOK || !strings.Contains(body, tc.want) || !strings.Contains(body, "internal error") || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%d %s", rec.Code, body)
			}
			if !strings.Contains(logs.String(), "level=ERROR") {
				t.Fatalf("not logged: %s", logs.String())
			}
		})
	}
	t.Run("the handler reads the event", func(t *testing.T) {
		s := &Server{log: slog.New(slog.DiscardHandler)}
		var got string
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b bytes.Buffer
			_, _ = b.ReadFrom(r.Body)
			got = b.String()
			writeJSON(w, http.StatusConflict, map[string]string{"x": "y"})
		})
		rec := httptest.NewRecorder()
		s.hookSafe(hooks.ClaudeCode, h).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"a":1}`)))
		if got != `{"a":1}` || rec.Code != http.StatusConflict {
			t.Fatalf("%q %d %s", got, rec.Code, rec.Body)
		}
	})
}

// TestLateVerdict: a request that finished between the end of the wait
// and its withdrawal, in every way it can finish, with and without
// requests still to wait for. Expired or withdrawn by an identical call
// beside it, with nothing left, was an index out of range.
func TestLateVerdict(t *testing.T) {
	allow := hooks.Verdict{Decision: hooks.Allow, Reason: "ok"}
	deny := hooks.Verdict{Decision: hooks.Deny, Reason: "no"}
	withdrawn := hooks.VerdictOf(hooks.Decide(hooks.Result{ID: "r1", Status: "cancelled"}))
	expired := hooks.VerdictOf(hooks.Decide(hooks.Result{ID: "r1", Status: "expired"}))
	rest := []approvals.Request{{ID: "r2"}}
	cases := []struct {
		name string
		v    hooks.Verdict
		rest []approvals.Request
		want string
	}{
		{"allowed, last", allow, nil, hooks.Allow},
		{"allowed, more left", allow, rest, hooks.Ask},
		{"denied, last", deny, nil, hooks.Deny},
		{"denied, more left", deny, rest, hooks.Deny},
		{"withdrawn, last", withdrawn, nil, hooks.Ask},
		{"withdrawn, more left", withdrawn, rest, hooks.Ask},
		{"expired, last", expired, nil, hooks.Ask},
		{"expired, more left", expired, rest, hooks.Ask},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := lateVerdict([]hooks.Verdict{tc.v}, tc.v, tc.rest, time.Second)
			if got.Decision != tc.want || got.Reason == "" {
				t.Fatalf("%+v", got)
			}
		})
	}
}
