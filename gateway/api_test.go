package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"
	"github.com/metnos/gateway/internal/testclock"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// The agents every e2e gateway has. Tokens are long enough to look real.
const (
	tokAdmin   = "tok-admin-4f1c0a9e7d3b2c1a"
	tokA1      = "tok-a1-9b8c7d6e5f4a3b2c1d"
	tokA2      = "tok-a2-1a2b3c4d5e6f7a8b9c"
	tokLimited = "tok-lim-0f0e0d0c0b0a0908"
	tokBench   = "tok-bench-77665544332211"
)

// e2eWait bounds what must happen (an event, an answer, a callback): a
// bound, never a wait, so a busy machine that takes 15 s still passes.
const e2eWait = time.Minute

// newTestClock is a clock the test moves by hand, on a fixed day.
func newTestClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
}

// e2eOptions shapes one gateway under test.
type e2eOptions struct {
	path    string           // database file; "" = a new one in t.TempDir()
	clock   *testclock.Clock // nil = the real clock
	mutate  func(cfg *config.Config)
	recheck time.Duration // AppOptions.TokenRecheck
	// resolver resolves callback hosts; nil: the system's.
	resolver callbackurl.Resolver
	tel      *telemetry.Provider // AppOptions.Telemetry
}

// e2eGateway is a whole gateway serving on a real loopback listener.
type e2eGateway struct {
	*gatewaytest.Gateway
	tb     testing.TB
	Path   string
	Clock  *testclock.Clock
	client *http.Client
	reads  *readsListener // what the server has read
}

func e2eAgent(id, tok string, admin bool, rate string) config.Agent {
	a := config.NewAgent(id)
	a.Token, a.Admin, a.Rate = tok, admin, rate
	a.SenderID = id // each agent acts for its own principal: web/<id>
	return a
}

// withPrincipals lets a test agent act for more principals.
func withPrincipals(a config.Agent, p ...string) config.Agent {
	a.Principals = p
	return a
}

// e2eConfig is the config of every e2e gateway: an admin agent, two
// ordinary ones, one limited to 2 requests a minute per capability, and a
// bench agent with a rate no benchmark reaches.
func e2eConfig(tb testing.TB, dir, path string) config.Config {
	tb.Helper()
	cfg := config.Default()
	cfg.Storage.Path = path
	cfg.Vaglio.LogDir = filepath.Join(dir, "vaglio")
	cfg.Agents = []config.Agent{
		e2eAgent("admin", tokAdmin, true, "1000000/s"),
		withPrincipals(e2eAgent("a1", tokA1, false, "1000000/s"),
			"web:gt-/srv/data/reports/*", "web:gt-/srv/**", "web:gt-/etc/*"),
		e2eAgent("a2", tokA2, false, "1000000/s"),
		e2eAgent("lim", tokLimited, false, "2/m"),
		e2eAgent("bench", tokBench, false, "1000000/s"),
	}
	// a1 and a2 may have callbacks on this machine's test servers.
	cfg.Agents[1].Callbacks = []string{"http://127.0.0.1:*/approve", "http://127.0.0.1:*/"}
	cfg.Agents[2].Callbacks = cfg.Agents[1].Callbacks
	cfg.Policy.Rules = []config.Rule{{Capability: "*", Target: "*password*", Action: "block"}}
	if err := cfg.Validate(); err != nil {
		tb.Fatalf("config: %v", err)
	}
	if a := cfg.Agents[3]; a.RateCount != 2 || a.RatePer != time.Minute {
		tb.Fatalf("lim agent rate = %d per %s, want 2 per minute", a.RateCount, a.RatePer)
	}
	return cfg
}

// startE2E opens (or reopens) a database and serves a gateway on
// 127.0.0.1:0 until the test ends or Stop is called.
func startE2E(tb testing.TB, o e2eOptions) *e2eGateway {
	tb.Helper()
	dir := tb.TempDir()
	if o.path == "" {
		o.path = filepath.Join(dir, "gateway.db")
	}
	cfg := e2eConfig(tb, dir, o.path)
	if o.mutate != nil {
		o.mutate(&cfg)
		if err := cfg.Validate(); err != nil {
			tb.Fatalf("config: %v", err)
		}
	}
	var now func() time.Time
	if o.clock != nil {
		now = o.clock.Now
	}
	reads := watchReads(gatewaytest.Listen(tb))
	g := &e2eGateway{
		reads: reads,
		Gateway: gatewaytest.StartOn(tb, reads, cfg, gateway.AppOptions{Now: now, Home: dir, TokenRecheck: o.recheck, CallbackResolver: o.resolver,
			Telemetry: o.tel}),
		tb: tb, Path: o.path, Clock: o.clock,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: time.Minute},
	}
	tb.Cleanup(g.Stop)
	return g
}

// Stop shuts the gateway down cleanly and closes its database.
func (g *e2eGateway) Stop() {
	g.Gateway.Close()
	g.client.Transport.(*http.Transport).CloseIdleConnections()
}

// apiResult is one HTTP answer, decoded as far as it goes.
type apiResult struct {
	Status int
	Header http.Header
	Body   []byte
}

// apiErrorBody is the shape of every error answer.
type apiErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Request *approvals.Request `json:"request"`
}

func (r apiResult) request(tb testing.TB) approvals.Request {
	tb.Helper()
	var out approvals.Request
	if err := json.Unmarshal(r.Body, &out); err != nil {
		tb.Fatalf("decode request from %s: %v", r.Body, err)
	}
	return out
}

func (r apiResult) apiError(tb testing.TB) apiErrorBody {
	tb.Helper()
	var out apiErrorBody
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Error.Code == "" {
		tb.Fatalf("decode error body from %s: %v", r.Body, err)
	}
	return out
}

// try makes one API call. body may be nil, a string or []byte (sent as
// is), or anything else (sent as JSON). It is safe in any goroutine.
func (g *e2eGateway) try(method, path, tok string, body any) (apiResult, error) {
	return g.tryOn(g.client, method, path, tok, body)
}

// tryOn is try with the client c.
func (g *e2eGateway) tryOn(c *http.Client, method, path, tok string, body any) (apiResult, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return apiResult{}, fmt.Errorf("encode body: %w", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, g.URL+path, rd)
	if err != nil {
		return apiResult{}, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return apiResult{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return apiResult{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return apiResult{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// do is try from the test goroutine: an error ends the test.
func (g *e2eGateway) do(tb testing.TB, method, path, tok string, body any) apiResult {
	tb.Helper()
	r, err := g.try(method, path, tok, body)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// async makes the call in its own goroutine (a long-poll); an error fails
// the test and answers status 0.
func (g *e2eGateway) async(tb testing.TB, method, path, tok string, body any) <-chan apiResult {
	ch := make(chan apiResult, 1)
	go func() {
		r, err := g.try(method, path, tok, body)
		if err != nil {
			tb.Error(err)
		}
		ch <- r
	}()
	return ch
}

// inFlight is async, returning once the server has read the call: a
// long-poll then waits in the server for what the test does next. The
// call goes on a connection of its own: a stop waits for a new
// connection (http.Server.Shutdown closes only idle ones, and a new one
// only after 5 s), where a kept-alive one whose request was just read
// may still count as idle and be closed without an answer.
func (g *e2eGateway) inFlight(tb testing.TB, method, path, tok string, body any) <-chan apiResult {
	read := g.reads.reading(method + " " + path + " HTTP/")
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: g.client.Timeout}
	ch := make(chan apiResult, 1)
	go func() {
		r, err := g.tryOn(fresh, method, path, tok, body)
		if err != nil {
			tb.Error(err)
		}
		ch <- r
	}()
	select {
	case <-read:
		return ch
	case r := <-ch: // answered already (an error, or a request finished)
		out := make(chan apiResult, 1)
		out <- r
		return out
	}
}

// want makes a call and fails the test unless it answers status.
func (g *e2eGateway) want(tb testing.TB, status int, method, path, tok string, body any) apiResult {
	tb.Helper()
	r := g.do(tb, method, path, tok, body)
	if r.Status != status {
		tb.Fatalf("%s %s = %d %s, want %d", method, path, r.Status, bytes.TrimSpace(r.Body), status)
	}
	return r
}

// req is a request body; fields left empty are not sent.
type jsonBody map[string]any

func pendingBody(callID, file string) jsonBody {
	return jsonBody{"call_id": callID, "capability": "fs:read", "target": "/srv/data/" + file,
		"intent": "read the report file", "executor": "report_reader", "args": map[string]any{"path": file}}
}

func decidedNowBody(callID string) jsonBody {
	return jsonBody{"call_id": callID, "capability": "llm:local", "target": "", "intent": "summarise locally",
		"executor": "summariser"}
}

// audit lists a request's audit rows, oldest first, by event.
func (g *e2eGateway) audit(tb testing.TB, requestID string) map[string]int {
	tb.Helper()
	rows, err := storage.ListAudit(context.Background(), g.App.DB, requestID, 1000)
	if err != nil {
		tb.Fatalf("ListAudit: %v", err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Event]++
	}
	return out
}

// sseEvent is one event read from /v1/events.
type sseEvent struct {
	Name string
	Data string
}

// sseStream reads /v1/events in the background.
type sseStream struct {
	events chan sseEvent
	resp   *http.Response
	cancel context.CancelFunc
}

// openEvents opens /v1/events and returns once the server has subscribed
// (its ": connected" comment arrived), so no later event can be missed.
func (g *e2eGateway) openEvents(tb testing.TB, tok string) *sseStream {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		cancel()
		tb.Fatalf("GET /v1/events: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		tb.Fatalf("GET /v1/events = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{events: make(chan sseEvent, 64), resp: resp, cancel: cancel}
	connected := make(chan struct{})
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ": connected":
				close(connected)
			case strings.HasPrefix(line, "event: "):
				ev.Name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.Data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.Name != "":
				s.events <- ev
				ev = sseEvent{}
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(e2eWait):
		s.Close()
		tb.Fatalf("no ': connected' on /v1/events within %s", e2eWait)
	}
	tb.Cleanup(s.Close)
	return s
}

func (s *sseStream) Close() {
	s.cancel()
	s.resp.Body.Close()
}

// next returns the next event, failing the test after a deadline.
func (s *sseStream) next(tb testing.TB) sseEvent {
	tb.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			tb.Fatalf("event stream closed")
		}
		return ev
	case <-time.After(e2eWait):
		tb.Fatalf("no event within %s", e2eWait)
	}
	return sseEvent{}
}

// eventually polls cond until it holds or a deadline passes.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(e2eWait)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countRows counts the rows of a table matching a condition.
func (g *e2eGateway) countRows(tb testing.TB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := g.App.DB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// eventNamed reads the next event and checks its name.
func (s *sseStream) nextNamed(tb testing.TB, name string) string {
	tb.Helper()
	ev := s.next(tb)
	if ev.Name != name {
		tb.Fatalf("event %q (data %s), want %q", ev.Name, ev.Data, name)
	}
	return ev.Data
}

func decodeInto(tb testing.TB, data string, v any) {
	tb.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		tb.Fatalf("decode %s: %v", data, err)
	}
}

func TestAPI_DecidedNow(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	cases := []struct {
		name      string
		body      jsonBody
		status    approvals.Status
		blockedBy string
	}{
		{"allowed by the table", decidedNowBody("now-1"), approvals.StatusAllowed, ""},
		{"denied by the guard", jsonBody{"call_id": "now-2", "capability": "code:exec", "target": "rm -rf /",
			"intent": "clean up", "executor": "shell"}, approvals.StatusDenied, "guard"},
		{"denied by a block rule", jsonBody{"call_id": "now-3", "capability": "fs:read", "target": "/srv/password.txt",
			"intent": "read the report", "executor": "report_reader"}, approvals.StatusDenied, "policy"},
		{"denied by the table", jsonBody{"call_id": "now-4", "capability": "fs:write", "target": "/srv/x",
			"autonomy": "ReadOnly", "intent": "write the report", "executor": "report_writer"}, approvals.StatusDenied, "policy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, tc.body).request(t)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("decided-now answer took %s", took)
			}
			if r.Status != tc.status || r.Decision != nil || r.DecidedBy != "policy" || r.DecidedAt == nil {
				t.Errorf("status %s decision %v decided_by %q decided_at %v, want %s, null, policy, set",
					r.Status, r.Decision, r.DecidedBy, r.DecidedAt, tc.status)
			}
			got := ""
			if r.BlockedBy != nil {
				got = *r.BlockedBy
			}
			if got != tc.blockedBy {
				t.Errorf("blocked_by %q, want %q (reason %q)", got, tc.blockedBy, r.Reason)
			}
			if r.Reason == "" || len(r.Trace) == 0 || r.Agent != "a1" || r.CallID != tc.body["call_id"] {
				t.Errorf("reason %q, trace %d steps, agent %q, call_id %q", r.Reason, len(r.Trace), r.Agent, r.CallID)
			}
			// It is stored: GET finds it, finished, and the audit has its outcome.
			again := g.want(t, http.StatusOK, "GET", "/v1/requests/"+r.ID+"?wait=10s", tokA1, nil).request(t)
			if again.Status != tc.status {
				t.Errorf("GET status %s, want %s", again.Status, tc.status)
			}
			if a := g.audit(t, r.ID); a[storage.AuditOutcome] != 1 || len(a) != 1 {
				t.Errorf("audit rows %v, want one outcome", a)
			}
		})
	}
}

func TestAPI_Check_StoresNothing(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	var ans struct {
		Outcome   string          `json:"outcome"`
		Reason    string          `json:"reason"`
		Autonomy  string          `json:"autonomy"`
		BlockedBy *string         `json:"blocked_by"`
		GrantID   *int64          `json:"grant_id"`
		Vaglio    json.RawMessage `json:"vaglio"`
		Trace     []any           `json:"trace"`
	}
	r := g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, pendingBody("chk-1", "a.txt"))
	decodeInto(t, string(r.Body), &ans)
	if ans.Outcome != "approval_required" || ans.Autonomy != "Supervised" || ans.BlockedBy != nil ||
		len(ans.Trace) == 0 || len(ans.Vaglio) == 0 || string(ans.Vaglio) == "null" {
		t.Errorf("check answer %s", r.Body)
	}
	r = g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, jsonBody{"capability": "code:exec", "target": "rm -rf /"})
	decodeInto(t, string(r.Body), &ans)
	if ans.Outcome != "denied" || ans.BlockedBy == nil || *ans.BlockedBy != "guard" {
		t.Errorf("check of rm -rf / = %s", r.Body)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests`); n != 0 {
		t.Errorf("%d requests stored by /v1/check, want 0", n)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event NOT IN ('prune', 'chain_genesis')`); n != 0 {
		t.Errorf("%d audit rows written by /v1/check, want 0", n)
	}
}

// TestAPI_PendingThenDecided_LongPoll: an agent posts with ?wait= and is
// answered when the admin API decides; another long-polls GET and is
// answered when the web page's path (Service.Decide as channel web) decides.
func TestAPI_PendingThenDecided_LongPoll(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})

	t.Run("POST wait, admin API decides", func(t *testing.T) {
		answered := g.async(t, "POST", "/v1/requests?wait=30s", tokA1, pendingBody("lp-1", "lp1.txt"))
		var id string
		eventually(t, "the request to be pending", func() bool {
			list, err := g.App.Service.ListPending(context.Background(), 100)
			for _, r := range list {
				if r.CallID == "lp-1" {
					id = r.ID
				}
			}
			return err == nil && id != ""
		})
		select {
		case r := <-answered:
			t.Fatalf("POST ?wait answered %d before any decision: %s", r.Status, r.Body)
		case <-time.After(100 * time.Millisecond):
		}
		d := g.want(t, http.StatusOK, "POST", "/v1/requests/"+id+"/decision", tokAdmin, jsonBody{"decision": "allow_once"}).request(t)
		if d.Status != approvals.StatusAllowed || d.Decision == nil || *d.Decision != approvals.AllowOnce ||
			d.DecidedBy != "api:admin" || d.GrantID != nil {
			t.Errorf("decision answer: status %s decision %v by %q grant %v", d.Status, d.Decision, d.DecidedBy, d.GrantID)
		}
		select {
		case r := <-answered:
			if r.Status != http.StatusOK {
				t.Fatalf("long-poll answered %d: %s", r.Status, r.Body)
			}
			got := r.request(t)
			if got.ID != id || got.Status != approvals.StatusAllowed || *got.Decision != approvals.AllowOnce {
				t.Errorf("long-poll got %s %s %v", got.ID, got.Status, got.Decision)
			}
		case <-time.After(e2eWait):
			t.Fatalf("long-poll not answered within %s of the decision", e2eWait)
		}
	})

	t.Run("GET wait, web decides", func(t *testing.T) {
		p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("lp-2", "lp2.txt")).request(t)
		if p.Status != approvals.StatusPending || p.Decision != nil || p.DecidedAt != nil || !p.ExpiresAt.After(p.CreatedAt) {
			t.Fatalf("pending request: %+v", p)
		}
		answered := g.inFlight(t, "GET", "/v1/requests/"+p.ID+"?wait=30s", tokA1, nil)
		if _, err := g.App.Service.Decide(context.Background(), p.ID, approvals.Deny,
			approvals.Actor{Channel: "web", ID: "owner", Name: "Roberto"}); err != nil {
			t.Fatalf("Decide: %v", err)
		}
		select {
		case r := <-answered:
			got := r.request(t)
			if r.Status != http.StatusOK || got.Status != approvals.StatusDenied || *got.Decision != approvals.Deny ||
				got.DecidedBy != "web:Roberto (owner)" {
				t.Errorf("long-poll got %d %s %v by %q", r.Status, got.Status, got.Decision, got.DecidedBy)
			}
		case <-time.After(e2eWait):
			t.Fatalf("long-poll not answered within %s of the decision", e2eWait)
		}
		if a := g.audit(t, p.ID); a[storage.AuditOutcome] != 1 || a[storage.AuditDecision] != 1 || len(a) != 2 {
			t.Errorf("audit rows %v, want one outcome and one decision", a)
		}
	})

	t.Run("wait passes with no decision", func(t *testing.T) {
		p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("lp-3", "lp3.txt")).request(t)
		start := time.Now()
		r := g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID+"?wait=300ms", tokA1, nil).request(t)
		if took := time.Since(start); took < 250*time.Millisecond || took > 5*time.Second {
			t.Errorf("?wait=300ms answered after %s", took)
		}
		if r.Status != approvals.StatusPending {
			t.Errorf("status %s, want pending", r.Status)
		}
	})
}

func TestAPI_AllowAlways_WritesGrant(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("aa-1", "inv/04.pdf")).request(t)
	d := g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_always"}).request(t)
	if d.Status != approvals.StatusAllowed || d.GrantID == nil || d.GrantExpiresAt == nil {
		t.Fatalf("allow_always answer: status %s grant %v expires %v", d.Status, d.GrantID, d.GrantExpiresAt)
	}
	var list struct {
		Grants []struct {
			ID         int64  `json:"id"`
			Channel    string `json:"channel"`
			SenderID   string `json:"sender_id"`
			Capability string `json:"capability"`
			Target     string `json:"target"`
			GrantedBy  string `json:"granted_by"`
			Active     bool   `json:"active"`
		} `json:"grants"`
	}
	decodeInto(t, string(g.want(t, http.StatusOK, "GET", "/v1/grants", tokA1, nil).Body), &list)
	if len(list.Grants) != 1 || list.Grants[0].ID != *d.GrantID || list.Grants[0].Channel != "web" ||
		list.Grants[0].SenderID != "a1" || list.Grants[0].Target != "/srv/data/inv/04.pdf" ||
		list.Grants[0].GrantedBy != "api:admin" || !list.Grants[0].Active {
		t.Errorf("grants of a1: %+v", list.Grants)
	}
	// The same request again is allowed at once by the grant.
	again := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, pendingBody("aa-2", "inv/04.pdf")).request(t)
	if again.Status != approvals.StatusAllowed || again.GrantID == nil || *again.GrantID != *d.GrantID {
		t.Errorf("after allow_always: status %s grant %v, want allowed by grant %d", again.Status, again.GrantID, *d.GrantID)
	}
	if a := g.audit(t, p.ID); a[storage.AuditGrantWritten] != 1 || a[storage.AuditDecision] != 1 {
		t.Errorf("audit rows %v, want grant_written and decision", a)
	}
	// The agent's grant_target is what Allow always grants when it is no
	// wider than allowed; a wider one falls back to the target itself.
	for _, tc := range []struct{ suggested, want string }{
		{"/srv/data/reports/*", "/srv/data/reports/*"},
		{"/srv/**", "/srv/data/reports/q1.pdf"},
		{"/etc/*", "/srv/data/reports/q1.pdf"},
	} {
		body := pendingBody("gt-"+tc.suggested, "reports/q1.pdf")
		body["grant_target"] = tc.suggested
		body["sender_id"], body["channel"] = "gt-"+tc.suggested, "web" // a principal of its own
		p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
		if p.GrantTarget != tc.want {
			t.Errorf("grant_target %q: the request says Allow always grants %q, want %q", tc.suggested, p.GrantTarget, tc.want)
		}
		d := g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_always"}).request(t)
		gr, err := g.App.Grants.Get(context.Background(), *d.GrantID)
		if err != nil || gr.Target != tc.want || gr.SenderID != "gt-"+tc.suggested {
			t.Errorf("grant_target %q: grant %+v, %v; want target %q", tc.suggested, gr, err, tc.want)
		}
	}
	// Allow always is refused for code:exec, and nothing changes.
	c := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, jsonBody{"call_id": "aa-3", "capability": "code:exec",
		"target": "git push", "intent": "push the branch", "executor": "git"}).request(t)
	e := g.want(t, http.StatusBadRequest, "POST", "/v1/requests/"+c.ID+"/decision", tokAdmin,
		jsonBody{"decision": "allow_always"}).apiError(t)
	if e.Error.Code != "allow_always_refused" {
		t.Errorf("code %q, want allow_always_refused", e.Error.Code)
	}
	if r := g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+c.ID, tokA1, nil).request(t); r.Status != approvals.StatusPending {
		t.Errorf("refused allow_always left status %s", r.Status)
	}
}

func TestAPI_SSE(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	s1 := g.openEvents(t, tokA1)
	s2 := g.openEvents(t, tokA2)
	admin := g.openEvents(t, tokAdmin)

	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("sse-1", "sse.txt")).request(t)
	var req gateway.RequiredEvent
	decodeInto(t, s1.nextNamed(t, approvals.EventRequired), &req)
	want := gateway.RequiredEvent{ID: p.ID, CallID: "sse-1", Capability: "fs:read", Target: "/srv/data/sse.txt",
		Command: "/srv/data/sse.txt", ExpiresAt: p.ExpiresAt.Format(time.RFC3339)}
	if req != want {
		t.Errorf("approval_required data %+v, want %+v", req, want)
	}
	if _, err := g.App.Service.Decide(context.Background(), p.ID, approvals.AllowOnce, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}
	var res gateway.ResolvedEvent
	decodeInto(t, s1.nextNamed(t, approvals.EventResolved), &res)
	if res.ID != p.ID || res.CallID != "sse-1" || res.Status != approvals.StatusAllowed ||
		res.Decision == nil || *res.Decision != approvals.AllowOnce {
		t.Errorf("approval_resolved data %+v", res)
	}
	// The admin's stream carries every agent's events.
	decodeInto(t, admin.nextNamed(t, approvals.EventRequired), &req)
	decodeInto(t, admin.nextNamed(t, approvals.EventResolved), &res)
	if req.ID != p.ID || res.ID != p.ID {
		t.Errorf("admin stream: %s then %s, want %s twice", req.ID, res.ID, p.ID)
	}
	// a2 saw none of a1's: the first event on its stream is its own request.
	p2 := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2, pendingBody("sse-2", "sse2.txt")).request(t)
	decodeInto(t, s2.nextNamed(t, approvals.EventRequired), &req)
	if req.ID != p2.ID {
		t.Errorf("a2's first event is about %s, want its own %s (a1's was %s)", req.ID, p2.ID, p.ID)
	}
	// A cancel is an approval_resolved too.
	g.want(t, http.StatusOK, "DELETE", "/v1/requests/"+p2.ID, tokA2, nil)
	decodeInto(t, s2.nextNamed(t, approvals.EventResolved), &res)
	if res.ID != p2.ID || res.Status != approvals.StatusCancelled || res.Decision != nil {
		t.Errorf("cancel event %+v", res)
	}
}

// callbackServer records every callback it receives; fail is how many
// calls to answer 500 before answering 200.
type callbackServer struct {
	URL   string
	calls chan callbackCall
}

type callbackCall struct {
	At     time.Time
	Body   []byte
	Sig    string
	Status int
}

func newCallbackServer(t *testing.T, fail int) *callbackServer {
	t.Helper()
	cs := &callbackServer{calls: make(chan callbackCall, 16)}
	var mu sync.Mutex
	n := 0
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		status := http.StatusOK
		if n <= fail {
			status = http.StatusInternalServerError
		}
		mu.Unlock()
		w.WriteHeader(status)
		cs.calls <- callbackCall{At: time.Now(), Body: body, Sig: r.Header.Get(approvals.SignatureHeader), Status: status}
	}))
	cs.URL = srv
	return cs
}

func (cs *callbackServer) next(t *testing.T, within time.Duration) callbackCall {
	t.Helper()
	select {
	case c := <-cs.calls:
		return c
	case <-time.After(within):
		t.Fatalf("no callback within %s", within)
	}
	return callbackCall{}
}

// httptestServer serves h on a loopback listener until the test ends.
func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

func TestAPI_Callback_Signed(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	cs := newCallbackServer(t, 0)
	body := pendingBody("cb-1", "cb.txt")
	body["callback_url"] = cs.URL + "/approve"
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "deny"})
	c := cs.next(t, e2eWait)
	if !approvals.VerifySignature([]byte(tokA1), c.Body, c.Sig) {
		t.Errorf("signature %q does not verify with a1's token over %s", c.Sig, c.Body)
	}
	if approvals.VerifySignature([]byte(tokA2), c.Body, c.Sig) || !strings.HasPrefix(c.Sig, "sha256=") {
		t.Errorf("signature %q verifies with another key, or lacks sha256=", c.Sig)
	}
	tampered := bytes.Replace(c.Body, []byte(`"deny"`), []byte(`"allow_once"`), 1)
	if approvals.VerifySignature([]byte(tokA1), tampered, c.Sig) {
		t.Error("signature verifies over a tampered body")
	}
	var cb approvals.CallbackBody
	decodeInto(t, string(c.Body), &cb)
	if cb.ID != p.ID || cb.CallID != "cb-1" || cb.Command != "/srv/data/cb.txt" || cb.Status != approvals.StatusDenied ||
		cb.Decision == nil || *cb.Decision != approvals.Deny {
		t.Errorf("callback body %s", c.Body)
	}
	// A request decided on arrival calls back too.
	now := decidedNowBody("cb-2")
	now["callback_url"] = cs.URL + "/approve"
	r := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA2, now).request(t)
	c = cs.next(t, e2eWait)
	decodeInto(t, string(c.Body), &cb)
	if !approvals.VerifySignature([]byte(tokA2), c.Body, c.Sig) || cb.ID != r.ID || cb.Status != approvals.StatusAllowed || cb.Decision != nil {
		t.Errorf("decided-now callback %s (sig ok %v)", c.Body, approvals.VerifySignature([]byte(tokA2), c.Body, c.Sig))
	}
}

func TestAPI_Callback_RetriedWithBackoff(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	cs := newCallbackServer(t, 2)
	body := pendingBody("cbr-1", "cbr.txt")
	body["callback_url"] = cs.URL
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	poll := g.inFlight(t, "GET", "/v1/requests/"+p.ID+"?wait=30s", tokA1, nil)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	decided := time.Now()
	var answered time.Time
	select {
	case r := <-poll:
		answered = time.Now()
		if got := r.request(t); got.Status != approvals.StatusAllowed {
			t.Errorf("long-poll got %s", got.Status)
		}
	case <-time.After(e2eWait):
		t.Fatalf("long-poll not answered within %s", e2eWait)
	}
	var calls []callbackCall
	for range 3 {
		calls = append(calls, cs.next(t, e2eWait))
	}
	// Neither the decision nor the waiting agent waited for the callback,
	// which succeeds only on its third attempt, 3s after the first.
	if !decided.Before(calls[2].At) || !answered.Before(calls[2].At) {
		t.Errorf("decision answered at %s, agent at %s, callback delivered at %s: the callback delayed them",
			decided.Format(time.StampMilli), answered.Format(time.StampMilli), calls[2].At.Format(time.StampMilli))
	}
	if calls[0].Status != 500 || calls[1].Status != 500 || calls[2].Status != 200 {
		t.Errorf("callback answers %d %d %d, want 500 500 200", calls[0].Status, calls[1].Status, calls[2].Status)
	}
	for i, c := range calls {
		if !bytes.Equal(c.Body, calls[0].Body) || !approvals.VerifySignature([]byte(tokA1), c.Body, c.Sig) {
			t.Errorf("attempt %d: body %s sig %s", i+1, c.Body, c.Sig)
		}
	}
	// The pauses are at least 1s then 2s (a slow machine only adds to them).
	gap1, gap2 := calls[1].At.Sub(calls[0].At), calls[2].At.Sub(calls[1].At)
	if gap1 < 900*time.Millisecond || gap2 < 1900*time.Millisecond {
		t.Errorf("retry gaps %s then %s, want a backoff of 1s then 2s", gap1, gap2)
	}
	select {
	case c := <-cs.calls:
		t.Errorf("a callback after the one that succeeded: %s", c.Body)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestAPI_IdempotentCallID(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	admin := g.openEvents(t, tokAdmin)
	first := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("idem-1", "one.txt")).request(t)
	// The same call_id with the same call, reworded: the same request, unchanged.
	reworded := pendingBody("idem-1", "one.txt")
	reworded["intent"], reworded["args"] = "read it again", map[string]any{"path": "other"}
	second := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, reworded).request(t)
	if second.ID != first.ID || second.Target != "/srv/data/one.txt" || second.Intent != first.Intent {
		t.Errorf("repeat call_id gave %s (%s), want %s (%s)", second.ID, second.Target, first.ID, first.Target)
	}
	// Another agent's same call_id is its own request.
	other := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2, pendingBody("idem-1", "one.txt")).request(t)
	if other.ID == first.ID {
		t.Error("a2's call_id idem-1 returned a1's request")
	}
	// Concurrent repeats: one request, one outcome row, one card event.
	var wg sync.WaitGroup
	ids := make(chan string, 20)
	for range 20 {
		wg.Go(func() {
			r, err := g.try("POST", "/v1/requests", tokA1, pendingBody("idem-2", "three.txt"))
			if err != nil || r.Status != http.StatusAccepted {
				t.Errorf("concurrent repeat: %d %s %v", r.Status, r.Body, err)
				return
			}
			var got approvals.Request
			if err := json.Unmarshal(r.Body, &got); err != nil {
				t.Errorf("decode %s: %v", r.Body, err)
			}
			ids <- got.ID
		})
	}
	wg.Wait()
	close(ids)
	var id2 string
	for id := range ids {
		if id2 == "" {
			id2 = id
		}
		if id != id2 {
			t.Errorf("concurrent repeats gave %s and %s", id2, id)
		}
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests WHERE agent = 'a1'`); n != 2 {
		t.Errorf("%d requests of a1, want 2", n)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event = 'outcome'`); n != 3 {
		t.Errorf("%d outcome audit rows, want 3", n)
	}
	required := map[string]int{}
	for range 3 {
		var ev gateway.RequiredEvent
		decodeInto(t, admin.nextNamed(t, approvals.EventRequired), &ev)
		required[ev.ID]++
	}
	if required[first.ID] != 1 || required[other.ID] != 1 || required[id2] != 1 {
		t.Errorf("approval_required events by id %v", required)
	}
	// After the decision the repeat answers 200 with the decision.
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+first.ID+"/decision", tokAdmin, jsonBody{"decision": "deny"})
	r := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, pendingBody("idem-1", "one.txt")).request(t)
	if r.ID != first.ID || r.Status != approvals.StatusDenied {
		t.Errorf("repeat after decision: %s %s", r.ID, r.Status)
	}
}

func TestAPI_Cancel(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("cx-1", "cx.txt")).request(t)
	poll := g.inFlight(t, "GET", "/v1/requests/"+p.ID+"?wait=30s", tokA1, nil)
	// Another agent cannot cancel it: it does not exist for them.
	g.want(t, http.StatusNotFound, "DELETE", "/v1/requests/"+p.ID, tokA2, nil)
	c := g.want(t, http.StatusOK, "DELETE", "/v1/requests/"+p.ID, tokA1, nil).request(t)
	if c.Status != approvals.StatusCancelled || c.Decision != nil || c.DecidedBy != "agent:a1" || c.DecidedAt == nil {
		t.Errorf("cancel answer: %s %v %q %v", c.Status, c.Decision, c.DecidedBy, c.DecidedAt)
	}
	select {
	case r := <-poll:
		if got := r.request(t); r.Status != http.StatusOK || got.Status != approvals.StatusCancelled {
			t.Errorf("long-poll got %d %s", r.Status, got.Status)
		}
	case <-time.After(e2eWait):
		t.Fatalf("long-poll not answered by the cancel within %s", e2eWait)
	}
	e := g.want(t, http.StatusConflict, "DELETE", "/v1/requests/"+p.ID, tokA1, nil).apiError(t)
	if e.Error.Code != "already_decided" || e.Request == nil || e.Request.Status != approvals.StatusCancelled {
		t.Errorf("second cancel: %+v", e)
	}
	e = g.want(t, http.StatusConflict, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"}).apiError(t)
	if e.Request == nil || e.Request.Status != approvals.StatusCancelled || !strings.Contains(e.Error.Message, "agent:a1") {
		t.Errorf("decision after cancel: %+v", e)
	}
	if a := g.audit(t, p.ID); a[storage.AuditCancelled] != 1 || a[storage.AuditDecision] != 0 {
		t.Errorf("audit rows %v", a)
	}
	// A request decided on arrival cannot be cancelled.
	d := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("cx-2")).request(t)
	g.want(t, http.StatusConflict, "DELETE", "/v1/requests/"+d.ID, tokA1, nil)
}

func TestAPI_Expiry_InjectedClock(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	g := startE2E(t, e2eOptions{clock: clock})
	events := g.openEvents(t, tokA1)

	body := pendingBody("exp-1", "exp.txt")
	body["timeout_s"] = 60
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	if got := p.ExpiresAt.Sub(p.CreatedAt); got != time.Minute {
		t.Errorf("expires %s after creation, want 1m", got)
	}
	events.nextNamed(t, approvals.EventRequired)
	poll := g.inFlight(t, "GET", "/v1/requests/"+p.ID+"?wait=30s", tokA1, nil)

	clock.Add(59 * time.Second)
	if _, err := g.App.Service.ExpireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, tokA1, nil).request(t); r.Status != approvals.StatusPending {
		t.Fatalf("status %s one second before the timeout", r.Status)
	}
	clock.Add(time.Second)
	if _, err := g.App.Service.ExpireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-poll:
		got := r.request(t)
		if r.Status != http.StatusOK || got.Status != approvals.StatusExpired || got.Decision != nil || got.DecidedBy != "timeout" {
			t.Errorf("long-poll got %d %s %v %q", r.Status, got.Status, got.Decision, got.DecidedBy)
		}
	case <-time.After(e2eWait):
		t.Fatalf("long-poll not answered by the expiry within %s", e2eWait)
	}
	var res gateway.ResolvedEvent
	decodeInto(t, events.nextNamed(t, approvals.EventResolved), &res)
	if res.ID != p.ID || res.Status != approvals.StatusExpired || res.Decision != nil {
		t.Errorf("expiry event %+v", res)
	}
	e := g.want(t, http.StatusConflict, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"}).apiError(t)
	if e.Request == nil || e.Request.Status != approvals.StatusExpired {
		t.Errorf("decision after expiry: %+v", e)
	}
	if a := g.audit(t, p.ID); a[storage.AuditExpired] != 1 || a[storage.AuditDecision] != 0 || len(a) != 2 {
		t.Errorf("audit rows %v, want outcome and one expired", a)
	}

	t.Run("a decision after the time is up expires it", func(t *testing.T) {
		body := pendingBody("exp-2", "exp2.txt")
		body["timeout_s"] = 30
		p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
		clock.Add(31 * time.Second)
		// No sweep ran yet (or one did): either way the decision is refused.
		e := g.want(t, http.StatusConflict, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin,
			jsonBody{"decision": "allow_once"}).apiError(t)
		if e.Request == nil || e.Request.Status != approvals.StatusExpired || e.Request.Decision != nil {
			t.Errorf("late decision: %+v", e)
		}
		if a := g.audit(t, p.ID); a[storage.AuditExpired] != 1 || a[storage.AuditDecision] != 0 {
			t.Errorf("audit rows %v", a)
		}
	})

	t.Run("the background sweep expires without a call", func(t *testing.T) {
		body := pendingBody("exp-3", "exp3.txt")
		body["timeout_s"] = 30
		p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
		clock.Add(31 * time.Second)
		r := g.want(t, http.StatusOK, "GET", "/v1/requests/"+p.ID+"?wait=10s", tokA1, nil).request(t)
		if r.Status != approvals.StatusExpired {
			t.Errorf("status %s after the sweep", r.Status)
		}
	})

	t.Run("timeout_s is clamped", func(t *testing.T) {
		for _, tc := range []struct {
			timeout any
			want    time.Duration
		}{{nil, 10 * time.Minute}, {1, approvals.MinTimeout}, {0.5, approvals.MinTimeout}, {86400 * 7, approvals.MaxTimeout}, {90, 90 * time.Second}} {
			body := pendingBody(fmt.Sprintf("clamp-%v", tc.timeout), "clamp.txt")
			if tc.timeout != nil {
				body["timeout_s"] = tc.timeout
			}
			p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
			if got := p.ExpiresAt.Sub(p.CreatedAt); got != tc.want {
				t.Errorf("timeout_s %v: expires after %s, want %s", tc.timeout, got, tc.want)
			}
		}
	})
}

// TestAPI_Expiry_RealClock runs the real clock through the shortest
// timeout (10 s) with an agent long-polling: the sweep answers it.
func TestAPI_Expiry_RealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 10 s of real time")
	}
	t.Parallel()
	g := startE2E(t, e2eOptions{})
	body := pendingBody("real-1", "real.txt")
	body["timeout_s"] = 10
	start := time.Now()
	r := g.want(t, http.StatusOK, "POST", "/v1/requests?wait=60s", tokA1, body).request(t)
	took := time.Since(start)
	if r.Status != approvals.StatusExpired || took < 9*time.Second || took > 30*time.Second {
		t.Errorf("status %s after %s, want expired after about 10s", r.Status, took)
	}
}

func TestAPI_ErrorStatuses(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	g := startE2E(t, e2eOptions{clock: clock})
	pending := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("err-p", "p.txt")).request(t)
	decided := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("err-d")).request(t)
	big := strings.Repeat("x", gateway.MaxBodyBytes)
	long := "/srv/" + strings.Repeat("a", 5000)

	cases := []struct {
		name         string
		method, path string
		tok          string
		body         any
		status       int
		code         string // "" = any
		mention      string // the message names this
	}{
		{"unknown capability", "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:wirte", "target": "/x"}, 400, "invalid_capability", "capability"},
		{"unknown capability, check", "POST", "/v1/check", tokA1, jsonBody{"capability": "fs:wirte", "target": "/x"}, 400, "invalid_capability", "capability"},
		{"unknown autonomy", "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:read", "target": "/x", "autonomy": "Godlike"}, 400, "invalid_autonomy", "autonomy"},
		{"missing target", "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:read"}, 400, "invalid_target", "target"},
		{"missing target, check", "POST", "/v1/check", tokA1, jsonBody{"capability": "fs:read"}, 400, "invalid_target", "target"},
		{"NUL in target", "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:read", "target": "/a\u0000b"}, 400, "invalid_target", "target"},
		{"target over 4 KiB", "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:read", "target": long}, 400, "invalid_target", "target"},
		{"malformed JSON", "POST", "/v1/requests", tokA1, `{"capability":`, 400, "invalid_json", ""},
		{"empty body", "POST", "/v1/requests", tokA1, "", 400, "invalid_json", ""},
		{"not an object", "POST", "/v1/requests", tokA1, `[1,2]`, 400, "invalid_json", "object"},
		{"not an object, decision", "POST", "/v1/requests/" + pending.ID + "/decision", tokAdmin, `"allow_once"`, 400, "invalid_json", "object"},
		{"trailing data", "POST", "/v1/requests", tokA1, `{"capability":"llm:local"} {}`, 400, "invalid_json", ""},
		{"unknown field", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "colour": "red"}, 400, "unknown_field", "colour"},
		{"wrong type", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "timeout_s": "soon"}, 400, "invalid_timeout_s", "timeout_s"},
		{"negative timeout", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "timeout_s": -1}, 400, "invalid_timeout_s", "timeout_s"},
		{"bad callback_url", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "callback_url": "ftp://x/y"}, 400, "invalid_callback_url", "callback_url"},
		{"channel without sender_id", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "channel": "web"}, 400, "invalid_sender_id", "sender_id"},
		{"call_id too long", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "call_id": strings.Repeat("c", 300)}, 400, "", "call_id"},
		{"bad wait", "POST", "/v1/requests?wait=soon", tokA1, decidedNowBody("err-w"), 400, "invalid_wait", "wait"},
		{"bad wait on GET", "GET", "/v1/requests/" + pending.ID + "?wait=-1s", tokA1, nil, 400, "invalid_wait", "wait"},
		{"a wait with a stray unit", "POST", "/v1/requests?wait=3x", tokA1, decidedNowBody("err-w3x"), 400, "invalid_wait", "wait"},
		{"a bare number as wait", "GET", "/v1/requests/" + pending.ID + "?wait=3", tokA1, nil, 400, "invalid_wait", "wait"},
		{"bad decision", "POST", "/v1/requests/" + pending.ID + "/decision", tokAdmin, jsonBody{"decision": "maybe"}, 400, "invalid_decision", "decision"},
		{"bad grant id", "DELETE", "/v1/grants/abc", tokAdmin, nil, 400, "invalid_id", "id"},
		{"no token", "POST", "/v1/requests", "", decidedNowBody("err-1"), 401, "unauthorized", ""},
		{"bad token", "POST", "/v1/requests", "tok-nobody", decidedNowBody("err-2"), 401, "unauthorized", ""},
		{"bad token, check", "POST", "/v1/check", "tok-nobody", decidedNowBody("err-3"), 401, "unauthorized", ""},
		{"bad token, events", "GET", "/v1/events", "tok-nobody", nil, 401, "unauthorized", ""},
		{"bad token, get", "GET", "/v1/requests/" + pending.ID, tokA1 + "x", nil, 401, "unauthorized", ""},
		{"not admin, decision", "POST", "/v1/requests/" + pending.ID + "/decision", tokA1, jsonBody{"decision": "allow_once"}, 403, "forbidden", ""},
		{"not admin, add grant", "POST", "/v1/grants", tokA1, jsonBody{"channel": "web", "sender_id": "a1", "capability": "fs:read", "target": "/x"}, 403, "forbidden", ""},
		{"not admin, revoke grant", "DELETE", "/v1/grants/1", tokA1, nil, 403, "forbidden", ""},
		{"unknown request", "GET", "/v1/requests/rnothere", tokA1, nil, 404, "not_found", ""},
		{"unknown request, wait", "GET", "/v1/requests/rnothere?wait=10s", tokA1, nil, 404, "not_found", ""},
		{"unknown request, cancel", "DELETE", "/v1/requests/rnothere", tokA1, nil, 404, "not_found", ""},
		{"unknown request, decision", "POST", "/v1/requests/rnothere/decision", tokAdmin, jsonBody{"decision": "deny"}, 404, "not_found", ""},
		{"unknown grant", "DELETE", "/v1/grants/999", tokAdmin, nil, 404, "not_found", ""},
		{"already decided, decision", "POST", "/v1/requests/" + decided.ID + "/decision", tokAdmin, jsonBody{"decision": "deny"}, 409, "already_decided", "policy"},
		{"already decided, cancel", "DELETE", "/v1/requests/" + decided.ID, tokA1, nil, 409, "already_decided", ""},
		{"body over 64 KiB", "POST", "/v1/requests", tokA1, jsonBody{"capability": "llm:local", "args": map[string]any{"x": big}}, 413, "body_too_large", ""},
		{"body over 64 KiB, check", "POST", "/v1/check", tokA1, jsonBody{"capability": "llm:local", "args": map[string]any{"x": big}}, 413, "body_too_large", ""},
		{"body over 64 KiB, decision", "POST", "/v1/requests/" + pending.ID + "/decision", tokAdmin, `{"decision":"` + big + `"}`, 413, "body_too_large", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := g.countRows(t, `SELECT COUNT(*) FROM requests`)
			r := g.do(t, tc.method, tc.path, tc.tok, tc.body)
			if r.Status != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, r.Status, r.Body, tc.status)
			}
			e := r.apiError(t)
			if tc.code != "" && e.Error.Code != tc.code {
				t.Errorf("code %q, want %q (message %q)", e.Error.Code, tc.code, e.Error.Message)
			}
			if !strings.Contains(e.Error.Message, tc.mention) {
				t.Errorf("message %q does not name %q", e.Error.Message, tc.mention)
			}
			if tc.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if after := g.countRows(t, `SELECT COUNT(*) FROM requests`); after != before {
				t.Errorf("a %d answer stored %d request(s)", r.Status, after-before)
			}
		})
	}
	// Nothing above changed the pending request.
	if r := g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+pending.ID, tokA1, nil).request(t); r.Status != approvals.StatusPending {
		t.Errorf("pending request now %s", r.Status)
	}
}

func TestAPI_RateLimited(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	g := startE2E(t, e2eOptions{clock: clock})
	for i := range 2 {
		g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody(fmt.Sprintf("rl-%d", i)))
	}
	r := g.want(t, http.StatusTooManyRequests, "POST", "/v1/requests", tokLimited, decidedNowBody("rl-2"))
	if e := r.apiError(t); e.Error.Code != "rate_limited" {
		t.Errorf("code %q", e.Error.Code)
	}
	if ra := r.Header.Get("Retry-After"); ra != "30" {
		t.Errorf("Retry-After %q, want 30 (2/m refills one every 30s)", ra)
	}
	// Asking again for a request that exists (same call_id) creates
	// nothing, so the limit does not refuse it.
	if again := g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody("rl-0")).request(t); again.CallID != "rl-0" {
		t.Errorf("repeat of rl-0 gave %s", again.CallID)
	}
	// The bucket is per capability: another capability still has tokens.
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokLimited, pendingBody("rl-other", "x.txt"))
	// Nothing stored for the refused one, but an audit row.
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests WHERE call_id = 'rl-2'`); n != 0 {
		t.Errorf("the refused request was stored")
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event = 'rate_limited' AND actor = 'agent:lim'`); n != 1 {
		t.Errorf("%d rate_limited audit rows, want 1", n)
	}
	// Other agents are not affected, and the bucket refills with time.
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("rl-a1"))
	clock.Add(30 * time.Second)
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody("rl-3"))
	g.want(t, http.StatusTooManyRequests, "POST", "/v1/requests", tokLimited, decidedNowBody("rl-4"))
}

// TestAPI_RateLimitRepeatTakesNoToken: a repeated call_id, whether it
// asks for the same thing or conflicts, gives back the token it took on
// the way in (Submit no longer looks the call_id up first), so the bucket
// still holds the tokens of the requests really made.
func TestAPI_RateLimitRepeatTakesNoToken(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody("rt-0"))
	for range 5 {
		g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody("rt-0"))
		conflict := decidedNowBody("rt-0")
		conflict["target"] = "elsewhere"
		g.want(t, http.StatusConflict, "POST", "/v1/requests", tokLimited, conflict)
	}
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, decidedNowBody("rt-1")) // the second of 2/m
	g.want(t, http.StatusTooManyRequests, "POST", "/v1/requests", tokLimited, decidedNowBody("rt-2"))
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests WHERE call_id LIKE 'rt-%'`); n != 2 {
		t.Errorf("%d requests stored, want 2", n)
	}
}

func TestAPI_AgentIsolation(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("iso-1", "secret-plan.txt")).request(t)
	unknown := g.want(t, http.StatusNotFound, "GET", "/v1/requests/rnothere", tokA2, nil)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/requests/" + p.ID},
		{"GET", "/v1/requests/" + p.ID + "?wait=10s"},
		{"DELETE", "/v1/requests/" + p.ID},
	} {
		start := time.Now()
		r := g.want(t, http.StatusNotFound, tc.method, tc.path, tokA2, nil)
		if !bytes.Equal(r.Body, unknown.Body) {
			t.Errorf("%s %s: body %s differs from an unknown id's %s", tc.method, tc.path, r.Body, unknown.Body)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s %s waited %s for another agent's request", tc.method, tc.path, took)
		}
	}
	// Its owner and the admin see it; it is still pending.
	g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, tokA1, nil)
	g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, tokAdmin, nil)
	// The same call_id from a2 does not return a1's request.
	if r := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2, pendingBody("iso-1", "mine.txt")).request(t); r.ID == p.ID {
		t.Error("a2 got a1's request through its call_id")
	}
	// Grants: an agent sees its own principal's only, whatever it asks for.
	for _, sender := range []string{"a1", "a2"} {
		g.want(t, http.StatusCreated, "POST", "/v1/grants", tokAdmin, jsonBody{"channel": "web", "sender_id": sender,
			"capability": "fs:read", "target": "/srv/" + sender + "/**"})
	}
	for _, path := range []string{"/v1/grants", "/v1/grants?all=true", "/v1/grants?channel=web&sender_id=a2"} {
		var list struct {
			Grants []struct {
				SenderID string `json:"sender_id"`
			}
		}
		decodeInto(t, string(g.want(t, http.StatusOK, "GET", path, tokA1, nil).Body), &list)
		if len(list.Grants) != 1 || list.Grants[0].SenderID != "a1" {
			t.Errorf("a1 GET %s: %+v", path, list.Grants)
		}
	}
	var all struct{ Grants []any }
	decodeInto(t, string(g.want(t, http.StatusOK, "GET", "/v1/grants", tokAdmin, nil).Body), &all)
	if len(all.Grants) != 2 {
		t.Errorf("admin sees %d grants, want 2", len(all.Grants))
	}
}

// TestAPI_ConcurrentDeciders: 50 admin calls decide one request at once;
// one wins, 49 are told who won.
func TestAPI_ConcurrentDeciders(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("race-1", "race.txt")).request(t)
	decisions := []string{"allow_once", "deny", "allow_always"}
	results := make(chan apiResult, 50)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 50 {
		wg.Go(func() {
			<-start
			r, err := g.try("POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": decisions[i%3]})
			if err != nil {
				t.Error(err)
			}
			results <- r
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var won approvals.Request
	var ok, conflict int
	var losers []apiErrorBody
	for r := range results {
		switch r.Status {
		case http.StatusOK:
			ok++
			won = r.request(t)
		case http.StatusConflict:
			conflict++
			losers = append(losers, r.apiError(t))
		default:
			t.Errorf("answer %d %s", r.Status, r.Body)
		}
	}
	if ok != 1 || conflict != 49 {
		t.Fatalf("%d won and %d were refused, want 1 and 49", ok, conflict)
	}
	for _, e := range losers {
		if e.Request == nil || e.Request.Decision == nil || *e.Request.Decision != *won.Decision || e.Request.DecidedBy != won.DecidedBy {
			t.Errorf("a loser was told %+v, the winner decided %s", e.Request, *won.Decision)
			break
		}
	}
	if a := g.audit(t, p.ID); a[storage.AuditDecision] != 1 || a[storage.AuditGrantWritten] > 1 {
		t.Errorf("audit rows %v, want one decision and at most one grant", a)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM grants`); n > 1 || (n == 1) != (*won.Decision == approvals.AllowAlways) {
		t.Errorf("%d grants after a %s", n, *won.Decision)
	}
}

func TestAPI_HealthAndMetrics(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	g.want(t, http.StatusOK, "GET", "/healthz", "", nil)
	g.want(t, http.StatusOK, "GET", "/readyz", "", nil)
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("m-1", "m.txt"))
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("m-2"))
	m := string(g.want(t, http.StatusOK, "GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		"gateway_pending_requests 1",
		`gateway_requests_total{capability="fs:read",outcome="approval_required"} 1`,
		`gateway_requests_total{capability="llm:local",outcome="allowed"} 1`,
		"gateway_decision_latency_seconds_count",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var reg []map[string]any
	decodeInto(t, string(g.want(t, http.StatusOK, "GET", "/v1/policy/registry", "", nil).Body), &reg)
	if len(reg) != 13 {
		t.Errorf("registry has %d capabilities, want 13", len(reg))
	}
}

// TestAPI_ForeignPrincipalRefused: a non-admin agent cannot act for (and so
// use the grants of) a principal other than its own or those listed.
func TestAPI_ForeignPrincipalRefused(t *testing.T) {
	a := gatewaytest.Agent("a1", "tok-a1-0123456789abcdef01", false)
	a.Principals = []string{"telegram:anna"}
	g := gatewaytest.Start(t, gatewaytest.Config(t, a), gateway.AppOptions{Home: t.TempDir()})
	post := func(body string) int {
		req, _ := http.NewRequest("POST", g.URL+"/v1/requests", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok-a1-0123456789abcdef01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for body, want := range map[string]int{
		`{"capability":"llm:local"}`:                                         200,
		`{"capability":"llm:local","channel":"web","sender_id":"owner"}`:     200,
		`{"capability":"llm:local","channel":"telegram","sender_id":"anna"}`: 200,
		`{"capability":"llm:local","channel":"telegram","sender_id":"bob"}`:  403,
		`{"capability":"llm:local","channel":"web","sender_id":"root"}`:      403,
	} {
		if got := post(body); got != want {
			t.Errorf("%s: status %d, want %d", body, got, want)
		}
	}
}

// TestAPI_CallIDConflict: a call_id reused for another call is a 409
// call_id_conflict naming the call_id, with the earlier request in the
// body; nothing is stored, no card is posted, no event is sent.
func TestAPI_CallIDConflict(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	admin := g.openEvents(t, tokAdmin)
	// llm:local is allowed at once under "x"...
	first := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("x")).request(t)
	if first.Status != approvals.StatusAllowed {
		t.Fatalf("llm:local: %s", first.Status)
	}
	rows := g.countRows(t, `SELECT COUNT(*) FROM requests`)
	audit := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event <> 'prune'`)
	// ... and "x" again for a write is refused, not answered "allowed".
	write := jsonBody{"call_id": "x", "capability": "fs:write", "target": "/srv/data/w.txt", "intent": "write"}
	r := g.want(t, http.StatusConflict, "POST", "/v1/requests?wait=1s", tokA1, write)
	var body struct {
		Error   struct{ Code, Message string } `json:"error"`
		CallID  string                         `json:"call_id"`
		Request approvals.Request              `json:"request"`
	}
	decodeInto(t, string(r.Body), &body)
	if body.Error.Code != "call_id_conflict" || !strings.Contains(body.Error.Message, `call_id "x"`) ||
		!strings.Contains(body.Error.Message, "capability") || body.CallID != "x" {
		t.Errorf("409 body %s", r.Body)
	}
	if body.Request.ID != first.ID || body.Request.Status != approvals.StatusAllowed || body.Request.Capability != "llm:local" {
		t.Errorf("409 carries request %s %s %s, want the earlier %s", body.Request.ID, body.Request.Capability, body.Request.Status, first.ID)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests`); n != rows {
		t.Errorf("%d requests after the conflict, want %d", n, rows)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event <> 'prune'`); n != audit {
		t.Errorf("%d audit rows after the conflict, want %d", n, audit)
	}
	// A pending request's call_id reused with another principal or target.
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("y", "y.txt")).request(t)
	var ev gateway.RequiredEvent
	decodeInto(t, admin.nextNamed(t, approvals.EventRequired), &ev)
	rows, audit = g.countRows(t, `SELECT COUNT(*) FROM requests`), g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event <> 'prune'`)
	for name, b := range map[string]jsonBody{
		"target": pendingBody("y", "z.txt"),
		"arg keys": func() jsonBody {
			b := pendingBody("y", "y.txt")
			b["args"] = map[string]any{"path": "y", "x": 1}
			return b
		}(),
		"autonomy": func() jsonBody { b := pendingBody("y", "y.txt"); b["autonomy"] = "ReadOnly"; return b }(),
		"principal": func() jsonBody {
			b := pendingBody("y", "y.txt")
			b["channel"], b["sender_id"] = "web", "gt-/srv/**"
			return b
		}(),
	} {
		r := g.want(t, http.StatusConflict, "POST", "/v1/requests", tokA1, b)
		decodeInto(t, string(r.Body), &body)
		if body.Error.Code != "call_id_conflict" || body.Request.ID != p.ID {
			t.Errorf("%s: %s", name, r.Body)
		}
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM requests`); n != rows {
		t.Errorf("%d requests after the conflicts, want %d", n, rows)
	}
	if n := g.countRows(t, `SELECT COUNT(*) FROM audit WHERE event <> 'prune'`); n != audit {
		t.Errorf("%d audit rows after the conflicts, want %d", n, audit)
	}
	select {
	case ev := <-admin.events:
		t.Errorf("an event after the conflicts: %s %s", ev.Name, ev.Data)
	case <-time.After(200 * time.Millisecond):
	}
	// /v1/check stores nothing and knows no call_ids: not a conflict.
	g.want(t, http.StatusOK, "POST", "/v1/check", tokA1, write)
}
