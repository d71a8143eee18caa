package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage"
)

// auditByRequest counts the audit rows of every request by event.
func auditByRequest(t *testing.T, db *storage.DB) map[string]map[string]int {
	t.Helper()
	rows, err := storage.ListAudit(context.Background(), db, "", 100000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for _, r := range rows {
		if r.RequestID == "" {
			continue
		}
		if out[r.RequestID] == nil {
			out[r.RequestID] = map[string]int{}
		}
		out[r.RequestID][r.Event]++
	}
	return out
}

// TestRestart_Clean stops a gateway with pending requests, a long-poll and
// an SSE stream in flight, moves the clock past one request's timeout, and
// starts a new gateway on the same file: nothing is lost or duplicated.
func TestRestart_Clean(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	path := filepath.Join(t.TempDir(), "gateway.db")
	g1 := startE2E(t, e2eOptions{path: path, clock: clock})

	var pending []approvals.Request
	for i, f := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		body := pendingBody("keep-"+f, f)
		body["timeout_s"] = 3600
		tok := tokA1
		if i%2 == 1 {
			tok = tokA2
		}
		pending = append(pending, g1.want(t, http.StatusAccepted, "POST", "/v1/requests", tok, body).request(t))
	}
	short := pendingBody("short", "short.txt")
	short["timeout_s"] = 60
	expiring := g1.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, short).request(t)
	decidedNow := g1.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("now")).request(t)
	always := g1.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("always", "inv/x.pdf")).request(t)
	g1.want(t, http.StatusOK, "POST", "/v1/requests/"+always.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_always"})

	events := g1.openEvents(t, tokA1)
	// gateway.MaxWait: it must end at the stop, not by itself.
	poll := g1.inFlight(t, "GET", "/v1/requests/"+pending[0].ID+"?wait=5m", tokA1, nil)

	// A long-poll the stop did not end would hold it past the e2e
	// client's one-minute timeout, and the poll would get no answer.
	g1.Stop()
	if r := <-poll; r.Status != http.StatusAccepted || r.request(t).Status != approvals.StatusPending {
		t.Errorf("the long-poll in flight at shutdown got %d %s, want 202 pending", r.Status, r.Body)
	}
	for range events.events { // the stop closed every connection: the stream ends
	}

	clock.Add(2 * time.Minute) // the short request's timeout passes while down
	g2 := startE2E(t, e2eOptions{path: path, clock: clock})

	// Expired at start-up: already so on the very first call.
	if r := g2.want(t, http.StatusOK, "GET", "/v1/requests/"+expiring.ID, tokA1, nil).request(t); r.Status != approvals.StatusExpired {
		t.Errorf("request that timed out while down: %s, want expired", r.Status)
	}
	// Every pending request is still pending, and decidable.
	for i, p := range pending {
		tok := tokA1
		if i%2 == 1 {
			tok = tokA2
		}
		r := g2.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, tok, nil).request(t)
		if r.Status != approvals.StatusPending || r.CallID != p.CallID || r.Target != p.Target || !r.ExpiresAt.Equal(p.ExpiresAt) {
			t.Errorf("after restart %s: %+v", p.ID, r)
		}
	}
	// An agent asking again (same call_id) gets the same request.
	if r := g2.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("keep-a.txt", "a.txt")).request(t); r.ID != pending[0].ID {
		t.Errorf("call_id after restart gave %s, want %s", r.ID, pending[0].ID)
	}
	poll2 := g2.inFlight(t, "GET", "/v1/requests/"+pending[0].ID+"?wait=30s", tokA1, nil) // the decision below wakes it
	g2.want(t, http.StatusOK, "POST", "/v1/requests/"+pending[0].ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	if _, err := g2.App.Service.Decide(context.Background(), pending[1].ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Errorf("Decide after restart: %v", err)
	}
	g2.want(t, http.StatusOK, "DELETE", "/v1/requests/"+pending[2].ID, tokA1, nil)
	if r := <-poll2; r.request(t).Status != approvals.StatusAllowed { // the e2e client gives up after a minute
		t.Errorf("long-poll after restart got %s", r.Body)
	}
	// The grant written before the restart still decides.
	if r := g2.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, pendingBody("always-2", "inv/x.pdf")).request(t); r.GrantID == nil {
		t.Errorf("grant lost across the restart: %s %s", r.Status, r.Reason)
	}
	g2.Stop()

	// A third start changes nothing that was there.
	g3 := startE2E(t, e2eOptions{path: path, clock: clock})
	if r := g3.want(t, http.StatusAccepted, "GET", "/v1/requests/"+pending[3].ID, tokA2, nil).request(t); r.Status != approvals.StatusPending {
		t.Errorf("after a second restart: %s", r.Status)
	}
	if r := g3.want(t, http.StatusOK, "GET", "/v1/requests/"+decidedNow.ID, tokA1, nil).request(t); r.Status != approvals.StatusAllowed {
		t.Errorf("decided-now after restarts: %s", r.Status)
	}
	audit := auditByRequest(t, g3.App.DB)
	if n := g3.countRows(t, `SELECT COUNT(*) FROM requests`); len(audit) != n {
		t.Errorf("%d requests have audit rows, %d requests exist", len(audit), n)
	}
	for id, ev := range audit {
		if ev[storage.AuditOutcome] != 1 {
			t.Errorf("request %s: %d outcome rows, want 1 (%v)", id, ev[storage.AuditOutcome], ev)
		}
		if ev[storage.AuditDecision]+ev[storage.AuditExpired]+ev[storage.AuditCancelled] > 1 {
			t.Errorf("request %s finished more than once: %v", id, ev)
		}
	}
	if ev := audit[expiring.ID]; ev[storage.AuditExpired] != 1 {
		t.Errorf("the request that timed out while down: %v", ev)
	}
	for _, p := range pending[:3] {
		if ev := audit[p.ID]; ev[storage.AuditDecision]+ev[storage.AuditCancelled] != 1 {
			t.Errorf("request %s decided after the restart: %v", p.ID, ev)
		}
	}
	if ev := audit[pending[3].ID]; len(ev) != 1 {
		t.Errorf("the request still pending has audit rows %v, want its outcome only", ev)
	}
}

// TestStop_NoGoroutineLeft: a gateway that served long-polls, an SSE
// stream and a callback leaves no goroutine behind once stopped. Not
// parallel, so no other test's goroutines come and go meanwhile.
func TestStop_NoGoroutineLeft(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // the last cleanup: after the servers close
	g := startE2E(t, e2eOptions{clock: newTestClock()})
	events := g.openEvents(t, tokA1)
	cs := newCallbackServer(t, 0)
	body := pendingBody("leak-1", "leak.txt")
	body["callback_url"] = cs.URL
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	events.nextNamed(t, approvals.EventRequired)
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("leak-2"))
	poll := g.async(t, "GET", "/v1/requests/"+p.ID+"?wait=60s", tokA1, nil)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	<-poll
	cs.next(t, e2eWait)
	left := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("leak-3", "leak3.txt")).request(t)
	poll = g.inFlight(t, "GET", "/v1/requests/"+left.ID+"?wait=60s", tokA1, nil) // in flight when the stop begins
	g.Stop()
	<-poll
	events.Close()
	http.DefaultClient.CloseIdleConnections()
}
