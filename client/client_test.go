package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/gateway"
)

func live(t *testing.T) *liveGateway {
	t.Helper()
	return startLive(t, gatewayConfig(t.TempDir()), gateway.AppOptions{Home: "/home/test"})
}

// ctxT bounds a test that would otherwise hang; it is no speed limit, so
// it is the same minute whatever the test expects to take.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestClient_RequestAllowedByPolicy(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	r, err := c.Request(ctxT(t), client.Req{Capability: "llm:local", Intent: "summarize"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Allowed() || r.Outcome != "allowed" || r.Decision != "" || r.Agent != "a1" || r.Autonomy != "Supervised" {
		t.Fatalf("got %+v", r)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.Raw, &raw); err != nil || raw["id"] != r.ID || raw["trace"] == nil {
		t.Fatalf("raw %s: %v", r.Raw, err)
	}
}

func TestClient_RequestWaitsForPerson(t *testing.T) {
	g := live(t)
	c, admin := client.New(g.URL, agentToken), client.New(g.URL, adminToken)
	ctx := ctxT(t)
	events, err := admin.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for e := range events {
			if e.Kind == client.EventRequired {
				_, _ = admin.Decide(ctx, e.ID, client.AllowOnce)
				return
			}
		}
	}()
	// The long-poll waits longer than the request lives: only the decision
	// waking it gives an allowed answer.
	r, err := c.Request(ctx, client.Req{CallID: "c1", Capability: "fs:write", Target: "/srv/app/x", Timeout: time.Minute}, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Allowed() || r.Decision != client.AllowOnce || r.DecidedBy != "api:admin" || r.CallID != "c1" {
		t.Fatalf("got %+v", r)
	}
	if got := r.ExpiresAt.Sub(r.CreatedAt); got != time.Minute {
		t.Fatalf("timeout_s not sent: expires after %s", got)
	}
}

func TestClient_WaitRunsOutThenCancel(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	ctx := ctxT(t)
	r, err := c.Request(ctx, client.Req{Capability: "fs:write", Target: "/srv/x"}, 300*time.Millisecond)
	if err != nil || r.Status != client.StatusPending {
		t.Fatalf("got %+v, %v", r, err)
	}
	r, err = c.Get(ctx, r.ID, 200*time.Millisecond)
	if err != nil || r.Status != client.StatusPending {
		t.Fatalf("get: %+v, %v", r, err)
	}
	r, err = c.Cancel(ctx, r.ID)
	if err != nil || r.Status != client.StatusCancelled || r.DecidedBy != "agent:a1" {
		t.Fatalf("cancel: %+v, %v", r, err)
	}
	_, err = c.Cancel(ctx, r.ID)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 409 || ae.Code != "already_decided" || ae.Request == nil ||
		ae.Request.Status != client.StatusCancelled {
		t.Fatalf("second cancel: %v (%+v)", err, ae)
	}
}

func TestClient_IdempotentCallID(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	ctx := ctxT(t)
	a, err := c.Request(ctx, client.Req{CallID: "same", Capability: "fs:write", Target: "/srv/x"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Request(ctx, client.Req{CallID: "same", Capability: "fs:write", Target: "/srv/x"}, 0)
	if err != nil || a.ID != b.ID {
		t.Fatalf("second post: %s vs %s, %v", a.ID, b.ID, err)
	}
}

func TestClient_CallIDConflict(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	ctx := ctxT(t)
	first, err := c.Request(ctx, client.Req{CallID: "x", Capability: "llm:local"}, 0)
	if err != nil || !first.Allowed() {
		t.Fatalf("llm:local: %v %s", err, first.Status)
	}
	r, err := c.Request(ctx, client.Req{CallID: "x", Capability: "fs:write", Target: "/srv/x"}, time.Second)
	var conflict *client.CallIDConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, client.ErrCallIDConflict) {
		t.Fatalf("reused call_id: %v (%T), request %+v", err, err, r)
	}
	if conflict.CallID != "x" || conflict.Earlier.ID != first.ID || !conflict.Earlier.Allowed() || r.Allowed() {
		t.Errorf("conflict %+v; returned %+v", conflict, r)
	}
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict || ae.Code != "call_id_conflict" ||
		!strings.Contains(err.Error(), `call_id "x"`) {
		t.Errorf("as *APIError: %+v; message %q", ae, err)
	}
}

func TestClient_Check(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	ctx := ctxT(t)
	res, err := c.Check(ctx, client.Req{Capability: "fs:read", Target: "~/.ssh/id_rsa"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "denied" || res.BlockedBy != "guard" || len(res.Trace) == 0 || res.Vaglio == nil {
		t.Fatalf("got %+v", res)
	}
	res, err = c.Check(ctx, client.Req{Capability: "fs:write", Target: "/srv/x"})
	if err != nil || res.Outcome != "approval_required" || res.BlockedBy != "" {
		t.Fatalf("got %+v, %v", res, err)
	}
	// The declared context reaches the judge: +0.05 for critical:false.
	plain, err := c.Check(ctx, client.Req{Capability: "fs:read", Target: "/srv/x", Executor: "fs_read", Intent: "read x"})
	if err != nil {
		t.Fatal(err)
	}
	declared, err := c.Check(ctx, client.Req{Capability: "fs:read", Target: "/srv/x", Executor: "fs_read", Intent: "read x",
		Context: map[string]any{"critical": false, "mode": "multistep"}})
	if err != nil || plain.Vaglio == nil || declared.Vaglio == nil || plain.Vaglio.Score != 0.80 || declared.Vaglio.Score != 0.85 {
		t.Errorf("scores %+v and %+v, want 0.80 and 0.85 (%v)", plain.Vaglio, declared.Vaglio, err)
	}
}

func TestClient_APIErrors(t *testing.T) {
	g := live(t)
	ctx := ctxT(t)
	cases := []struct {
		name   string
		call   func() error
		status int
		code   string
	}{
		{"unknown capability", func() error {
			_, err := client.New(g.URL, agentToken).Request(ctx, client.Req{Capability: "fs:nope", Target: "x"}, 0)
			return err
		}, 400, "invalid_capability"},
		{"bad token", func() error {
			_, err := client.New(g.URL, "wrong").Check(ctx, client.Req{Capability: "llm:local"})
			return err
		}, 401, "unauthorized"},
		{"not found", func() error {
			_, err := client.New(g.URL, agentToken).Get(ctx, "rnothere", 0)
			return err
		}, 404, "not_found"},
		{"not admin", func() error {
			_, err := client.New(g.URL, agentToken).Decide(ctx, "rnothere", client.AllowOnce)
			return err
		}, 403, "forbidden"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ae *client.APIError
			err := tc.call()
			if !errors.As(err, &ae) || ae.StatusCode != tc.status || ae.Code != tc.code || ae.Message == "" {
				t.Fatalf("err %v, want %d %s", err, tc.status, tc.code)
			}
			if strings.Contains(err.Error(), agentToken) {
				t.Fatalf("the token leaked into %q", err)
			}
		})
	}
}

func TestClient_RateLimited(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, otherToken) // b2: 1 request an hour per capability
	ctx := ctxT(t)
	if _, err := c.Request(ctx, client.Req{Capability: "llm:local"}, 0); err != nil {
		t.Fatal(err)
	}
	_, err := c.Request(ctx, client.Req{Capability: "llm:local"}, 0)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Code != "rate_limited" || ae.RetryAfter < time.Minute {
		t.Fatalf("err %v (%+v)", err, ae)
	}
}

func TestClient_Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	c := client.New(url, agentToken)
	ctx := ctxT(t)
	if _, err := c.Request(ctx, client.Req{Capability: "llm:local"}, time.Second); !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("request: %v", err)
	}
	if _, err := c.Events(ctx); !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("events: %v", err)
	}
}

func TestClient_OtherAgentsRequestIsNotFound(t *testing.T) {
	g := live(t)
	ctx := ctxT(t)
	r, err := client.New(g.URL, agentToken).Request(ctx, client.Req{Capability: "fs:write", Target: "/srv/x"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.New(g.URL, otherToken).Get(ctx, r.ID, 0)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("err %v", err)
	}
}

func TestClient_Events(t *testing.T) {
	g := live(t)
	c, admin := client.New(g.URL, agentToken), client.New(g.URL, adminToken)
	ctx := ctxT(t)
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Request(ctx, client.Req{CallID: "call-7", Capability: "code:exec", Target: "npm install"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	e := nextEvent(t, events)
	if e.Kind != client.EventRequired || e.ID != r.ID || e.CallID != "call-7" || e.Capability != "code:exec" ||
		e.Target != "npm install" || e.Command != "npm install" || e.ExpiresAt.IsZero() || len(e.Data) == 0 {
		t.Fatalf("required: %+v", e)
	}
	if _, err := admin.Decide(ctx, r.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	e = nextEvent(t, events)
	if e.Kind != client.EventResolved || e.ID != r.ID || e.CallID != "call-7" || e.Decision != client.Deny ||
		e.Status != client.StatusDenied {
		t.Fatalf("resolved: %+v", e)
	}
	// Another agent's requests are not on this stream.
	if _, err := client.New(g.URL, otherToken).Request(ctx, client.Req{Capability: "fs:write", Target: "/x"}, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-events:
		t.Fatalf("got another agent's event %+v", e)
	case <-time.After(300 * time.Millisecond):
	}
}

func nextEvent(t *testing.T, ch <-chan client.Event) client.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("event stream closed")
		}
		return e
	case <-time.After(time.Minute):
		t.Fatal("no event within a minute")
	}
	return client.Event{}
}

// TestClient_EventsReconnect restarts the gateway on the same database and
// port under an open stream and a long-poll: the stream says it
// reconnected and goes on delivering, the long-poll gets its answer.
func TestClient_EventsReconnect(t *testing.T) {
	g := live(t)
	c, admin := client.New(g.URL, agentToken), client.New(g.URL, adminToken)
	ctx := ctxT(t)
	events, err := c.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := c.Request(ctx, client.Req{Capability: "fs:write", Target: "/srv/a"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, events); e.Kind != client.EventRequired || e.ID != pending.ID {
		t.Fatalf("before restart: %+v", e)
	}
	waited := make(chan client.Request, 1)
	go func() {
		r, err := c.Get(ctx, pending.ID, 50*time.Second)
		if err != nil {
			t.Errorf("get across restart: %v", err)
		}
		waited <- r
	}()
	time.Sleep(100 * time.Millisecond) // let the long-poll start
	g.Restart()
	if e := nextEvent(t, events); e.Kind != client.EventReconnected {
		t.Fatalf("after restart: %+v, want %s", e, client.EventReconnected)
	}
	r, err := c.Request(ctx, client.Req{CallID: "after", Capability: "code:exec", Target: "make"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, events); e.Kind != client.EventRequired || e.ID != r.ID || e.Command != "make" {
		t.Fatalf("after reconnect: %+v", e)
	}
	if _, err := admin.Decide(ctx, pending.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-waited:
		if !got.Allowed() {
			t.Fatalf("long-poll across restart: %+v", got)
		}
	case <-time.After(time.Minute):
		t.Fatal("the long-poll did not survive the restart")
	}
	if e := nextEvent(t, events); e.Kind != client.EventResolved || e.ID != pending.ID || e.Status != client.StatusAllowed {
		t.Fatalf("resolved after reconnect: %+v", e)
	}
}

func TestClient_EventsClosedWithContext(t *testing.T) {
	g := live(t)
	ctx, cancel := context.WithCancel(context.Background())
	events, err := client.New(g.URL, agentToken).Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Fatal("event after cancel")
		}
	case <-time.After(time.Minute):
		t.Fatal("stream not closed after cancel")
	}
}

func TestClient_EventsBadToken(t *testing.T) {
	g := live(t)
	_, err := client.New(g.URL, "wrong").Events(ctxT(t))
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("err %v", err)
	}
}

func TestVerifyCallback(t *testing.T) {
	body := []byte(`{"id":"r1","call_id":"c1","command":"npm install","decision":"allow_once","status":"allowed"}`)
	sig := approvals.Sign([]byte(agentToken), body)
	if !client.VerifyCallback(agentToken, body, sig) {
		t.Fatal("the gateway's own signature does not verify")
	}
	for name, tc := range map[string]struct {
		token, sig string
		body       []byte
	}{
		"other token":  {"tok-other", sig, body},
		"changed body": {agentToken, sig, append([]byte(" "), body...)},
		"no header":    {agentToken, "", body},
		"bare hex":     {agentToken, strings.TrimPrefix(sig, "sha256="), body},
	} {
		if client.VerifyCallback(tc.token, tc.body, tc.sig) {
			t.Errorf("%s: verified", name)
		}
	}
}

// TestParseCallback_FromGateway: a request with a callback_url is decided;
// the gateway's POST is taken as it is by ParseCallback.
func TestParseCallback_FromGateway(t *testing.T) {
	g := live(t)
	got := make(chan client.Callback, 1)
	agentSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb, err := client.ParseCallback(agentToken, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got <- cb
	}))
	defer agentSrv.Close()
	ctx := ctxT(t)
	c := client.New(g.URL, agentToken)
	r, err := c.Request(ctx, client.Req{CallID: "cb-1", Capability: "code:exec", Target: "npm install",
		CallbackURL: agentSrv.URL + "/approve"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(g.URL, adminToken).Decide(ctx, r.ID, client.AllowOnce); err != nil {
		t.Fatal(err)
	}
	select {
	case cb := <-got:
		want := client.Callback{ID: r.ID, CallID: "cb-1", Command: "npm install", Decision: client.AllowOnce, Status: client.StatusAllowed}
		if cb != want || !cb.Allowed() {
			t.Fatalf("got %+v, want %+v", cb, want)
		}
	case <-time.After(time.Minute):
		t.Fatal("no callback")
	}
}

func TestParseCallback_BadSignature(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/approve", strings.NewReader(`{"id":"r1","status":"allowed"}`))
	req.Header.Set(client.SignatureHeader, "sha256=00")
	if _, err := client.ParseCallback(agentToken, req); !errors.Is(err, client.ErrBadSignature) {
		t.Fatalf("err %v", err)
	}
}

func TestReq_MarshalJSON(t *testing.T) {
	b, err := json.Marshal(client.Req{Capability: "fs:read", Target: "/x", Timeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"capability":"fs:read","target":"/x","timeout_s":90}` {
		t.Fatalf("got %s", b)
	}
}

// TestClient_Hook: the event goes to the gateway as written and its
// answer comes back as written.
func TestClient_Hook(t *testing.T) {
	g := live(t)
	c := client.New(g.URL, agentToken)
	ev := `{"hook_event_name":"PreToolUse","cwd":"/home/test/p","tool_name":"Read","tool_input":{"file_path":"~/.ssh/id_rsa"},"tool_use_id":"toolu_1"}`
	b, err := c.Hook(ctxT(t), "claude-code", []byte(ev), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		HookSpecificOutput struct{ PermissionDecision, PermissionDecisionReason string }
	}
	if err := json.Unmarshal(b, &out); err != nil || out.HookSpecificOutput.PermissionDecision != "deny" ||
		!strings.Contains(out.HookSpecificOutput.PermissionDecisionReason, "forbidden path .ssh") {
		t.Fatalf("%s: %v", b, err)
	}
	var ae *client.APIError
	if _, err := client.New(g.URL, "nope").Hook(ctxT(t), "claude-code", []byte(ev), 0); !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad token: %v", err)
	}
}
