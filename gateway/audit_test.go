package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage"
)

// auditRow is a row of GET /v1/audit as a client reads it.
type auditRow struct {
	Seq       int64          `json:"seq"`
	At        string         `json:"at"`
	Actor     string         `json:"actor"`
	Event     string         `json:"event"`
	RequestID *string        `json:"request_id"`
	GrantID   *int64         `json:"grant_id"`
	Detail    map[string]any `json:"detail"`
	Hash      string         `json:"hash"`
}

type auditPageBody struct {
	Events []auditRow `json:"events"`
	Next   *int64     `json:"next"`
}

func (g *e2eGateway) auditPage(tb testing.TB, query string) auditPageBody {
	tb.Helper()
	r := g.want(tb, http.StatusOK, "GET", "/v1/audit?"+query, tokAdmin, nil)
	var p auditPageBody
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
	return p
}

// TestAuditAPI_EveryEventKind drives every kind of audited event through
// the gateway and reads the trail back from GET /v1/audit: each row has the
// right actor and request id, no argument value appears anywhere, and the
// chain verifies.
func TestAuditAPI_EveryEventKind(t *testing.T) {
	clock := newTestClock()
	g := startE2E(t, e2eOptions{clock: clock})
	ctx := context.Background()
	const secret = "ARGVALUE-d41d8cd98f00"
	withArgs := func(b jsonBody) jsonBody {
		b["args"] = map[string]any{"path": secret, "token": secret}
		return b
	}

	now := g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, withArgs(decidedNowBody("ev-now"))).request(t)
	once := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, withArgs(pendingBody("ev-once", "once.txt"))).request(t)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+once.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	always := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2, withArgs(pendingBody("ev-always", "always.txt"))).request(t)
	decided := g.want(t, http.StatusOK, "POST", "/v1/requests/"+always.ID+"/decision", tokAdmin,
		jsonBody{"decision": "allow_always"}).request(t)
	if decided.GrantID == nil {
		t.Fatal("allow_always wrote no grant")
	}
	grantID := *decided.GrantID
	g.want(t, http.StatusOK, "DELETE", fmt.Sprintf("/v1/grants/%d", grantID), tokAdmin, nil)
	cancelled := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, withArgs(pendingBody("ev-cancel", "c.txt"))).request(t)
	g.want(t, http.StatusOK, "DELETE", "/v1/requests/"+cancelled.ID, tokA1, nil)
	expiring := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2,
		withArgs(jsonBody{"call_id": "ev-exp", "capability": "fs:read", "target": "/srv/data/e.txt", "timeout_s": 10})).request(t)
	for i := range 3 { // the third is over lim's 2 a minute
		g.do(t, "POST", "/v1/requests", tokLimited, withArgs(decidedNowBody(fmt.Sprintf("ev-lim-%d", i))))
	}
	if _, err := g.App.Service.SetNote(ctx, once.ID, "fine", approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}
	g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "fs:read", "target": "/srv/blocked/*", "action": "block"})
	clock.Add(time.Minute)
	if n, err := g.App.Service.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("ExpireDue = %d, %v", n, err)
	}
	if _, err := g.App.Service.Prune(ctx, false); err != nil {
		t.Fatal(err)
	}

	raw := g.want(t, http.StatusOK, "GET", "/v1/audit?limit=1000", tokAdmin, nil)
	if strings.Contains(string(raw.Body), secret) {
		t.Fatalf("an argument value is in the audit trail:\n%s", raw.Body)
	}
	page := g.auditPage(t, "limit=1000")
	if page.Next != nil {
		t.Fatalf("next = %d on the only page", *page.Next)
	}
	type key struct{ event, request string }
	got := map[key][]auditRow{}
	for _, e := range page.Events {
		rid := ""
		if e.RequestID != nil {
			rid = *e.RequestID
		}
		got[key{e.Event, rid}] = append(got[key{e.Event, rid}], e)
	}
	cases := []struct {
		name    string
		event   string
		request string
		actor   string
		agent   string
		check   func(t *testing.T, e auditRow)
	}{
		{"outcome decided now", storage.AuditOutcome, now.ID, "agent:a1", "a1", nil},
		{"outcome pending", storage.AuditOutcome, once.ID, "agent:a1", "a1", nil},
		{"decision", storage.AuditDecision, once.ID, "api:admin", "a1", func(t *testing.T, e auditRow) {
			if e.Detail["decision"] != "allow_once" {
				t.Errorf("detail %v", e.Detail)
			}
		}},
		{"grant written", storage.AuditGrantWritten, always.ID, "api:admin", "a2", func(t *testing.T, e auditRow) {
			if e.GrantID == nil || *e.GrantID != grantID {
				t.Errorf("grant_id %v, want %d", e.GrantID, grantID)
			}
		}},
		{"decision allow always", storage.AuditDecision, always.ID, "api:admin", "a2", nil},
		{"cancelled", storage.AuditCancelled, cancelled.ID, "agent:a1", "a1", nil},
		{"expired", storage.AuditExpired, expiring.ID, "timeout", "a2", nil},
		{"note", storage.AuditNote, once.ID, "web:owner", "a1", nil},
		{"grant revoked", storage.AuditGrantRevoked, "", "api:admin", "a2", func(t *testing.T, e auditRow) {
			if e.GrantID == nil || *e.GrantID != grantID {
				t.Errorf("grant_id %v, want %d", e.GrantID, grantID)
			}
		}},
		{"rate limited", storage.AuditRateLimited, "", "agent:lim", "lim", nil},
		{"prune", storage.AuditPrune, "", "prune", "", nil},
		{"rule added", storage.AuditRuleAdded, "", "api:admin", "", nil},
		{"genesis", storage.AuditGenesis, "", "gateway", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := got[key{tc.event, tc.request}]
			if tc.event == storage.AuditPrune && len(rows) == 2 { // at start, and the pass above
				rows = rows[1:]
			}
			if len(rows) != 1 {
				t.Fatalf("%d rows of %s for request %q, want 1 (all: %+v)", len(rows), tc.event, tc.request, page.Events)
			}
			e := rows[0]
			if e.Actor != tc.actor {
				t.Errorf("actor %q, want %q", e.Actor, tc.actor)
			}
			if a, _ := e.Detail["agent"].(string); a != tc.agent {
				t.Errorf("agent %q, want %q", a, tc.agent)
			}
			if e.Seq == 0 || len(e.Hash) != 64 {
				t.Errorf("seq %d hash %q", e.Seq, e.Hash)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
	for i, e := range page.Events {
		if e.Seq != int64(i+1) {
			t.Fatalf("row %d has seq %d: not oldest first without gaps", i, e.Seq)
		}
	}
	v, err := g.App.DB.VerifyAudit(ctx, nil)
	if err != nil || !v.OK || v.Rows != len(page.Events) {
		t.Fatalf("verify: %v %q, want %d rows", err, v.Summary(), len(page.Events))
	}
}

// TestAuditAPI_AdminOnlyAndBadInput: agents that are not admin get 403;
// bad parameters 400 naming them; pages follow next to the end.
func TestAuditAPI_AdminOnlyAndBadInput(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	if r := g.do(t, "GET", "/v1/audit", tokA1, nil); r.Status != http.StatusForbidden {
		t.Fatalf("non-admin: %d %s, want 403", r.Status, r.Body)
	}
	if r := g.do(t, "GET", "/v1/audit", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", r.Status)
	}
	for _, q := range []struct{ query, code string }{
		{"since=yesterday", "invalid_since"}, {"until=-5h", "invalid_until"}, {"after=x", "invalid_after"},
		{"limit=0", "invalid_limit"}, {"limit=1001", "invalid_limit"},
	} {
		r := g.do(t, "GET", "/v1/audit?"+q.query, tokAdmin, nil)
		if r.Status != http.StatusBadRequest || r.apiError(t).Error.Code != q.code {
			t.Errorf("%s: %d %s, want 400 %s", q.query, r.Status, r.Body, q.code)
		}
	}
	for i := range 7 {
		g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody(fmt.Sprintf("pg-%d", i)))
	}
	var seqs []int64
	after := int64(0)
	pages := 0
	for {
		p := g.auditPage(t, fmt.Sprintf("event=outcome&limit=3&after=%d", after))
		pages++
		for _, e := range p.Events {
			seqs = append(seqs, e.Seq)
		}
		if p.Next == nil {
			break
		}
		after = *p.Next
	}
	if len(seqs) != 7 || pages != 3 {
		t.Fatalf("paged %v in %d pages, want 7 rows in 3", seqs, pages)
	}
	if p := g.auditPage(t, "event=outcome&limit=7"); p.Next != nil || len(p.Events) != 7 {
		t.Fatalf("exact page: %d events, next %v", len(p.Events), p.Next)
	}
	if p := g.auditPage(t, "event=nothing"); p.Events == nil || len(p.Events) != 0 || p.Next != nil {
		t.Fatalf("empty page: %+v", p)
	}
}
