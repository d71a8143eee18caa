package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestAPI_Tokens_ChildReplaysParentCallID: a child narrowed to reading
// /tmp/sub posts the body and call_id of its parent's request that a
// person allowed once. It gets a denial or a 4xx, never the parent's
// request, and the parent's request gains no decision, use or audit row.
func TestAPI_Tokens_ChildReplaysParentCallID(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	body := jsonBody{"call_id": "deploy-1", "capability": "fs:write", "target": "/srv/app/x.conf", "intent": "edit"}
	parent := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+parent.ID+"/decision", tokAdmin, jsonBody{"decision": "allow_once"})
	before := g.audit(t, parent.ID)

	child := makeToken(t, g, tokA1, jsonBody{"ttl": "1h", "name": "reader",
		"allow_capabilities": []string{"fs:read"}, "targets": map[string][]string{"fs:read": {"/tmp/sub/**"}}})
	sibling := makeToken(t, g, tokA1, jsonBody{"ttl": "1h", "name": "writer"})
	for _, tok := range []string{child.Token, sibling.Token} {
		for i := 0; i < 2; i++ { // the second time repeats the child's own call_id
			r := g.do(t, "POST", "/v1/requests", tok, body)
			if r.Status >= 400 && r.Status < 500 {
				continue
			}
			got := r.request(t)
			if got.ID == parent.ID || got.Status == approvals.StatusAllowed {
				t.Fatalf("a child replaying its parent's call_id got %s %s (parent %s)", got.ID, got.Status, parent.ID)
			}
			if tok == child.Token && got.Status != approvals.StatusDenied {
				t.Errorf("the narrowed child's replay: %s, want denied", got.Status)
			}
		}
	}
	after := g.audit(t, parent.ID)
	for ev, n := range after {
		if before[ev] != n {
			t.Errorf("the parent's request gained audit rows: %v, before %v", after, before)
		}
	}
	if got := g.want(t, http.StatusOK, "GET", "/v1/requests/"+parent.ID, tokA1, nil).request(t); got.Status != approvals.StatusAllowed {
		t.Errorf("the parent's request is %s", got.Status)
	}
	// The parent's own repeat still answers its request.
	if got := g.do(t, "POST", "/v1/requests", tokA1, body).request(t); got.ID != parent.ID {
		t.Errorf("the parent's repeat answered %s, want %s", got.ID, parent.ID)
	}
}

// TestAPI_Tokens_ChildSeesOnlyItsOwn: a child reads, waits on, streams
// and cancels its own requests and its descendants', never its parent's
// or a sibling's; the root agent sees them all; the cancel is audited
// with the token's id.
func TestAPI_Tokens_ChildSeesOnlyItsOwn(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	child := makeToken(t, g, tokA1, jsonBody{"ttl": "1h", "name": "c"})
	grand := makeToken(t, g, child.Token, jsonBody{"ttl": "1h", "name": "g"})
	sibling := makeToken(t, g, tokA1, jsonBody{"ttl": "1h", "name": "s"})
	stream := g.openEvents(t, child.Token)

	parentReq := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("p", "/srv/p")).request(t)
	siblingReq := g.want(t, http.StatusAccepted, "POST", "/v1/requests", sibling.Token, pendingBody("s", "/srv/s")).request(t)
	grandReq := g.want(t, http.StatusAccepted, "POST", "/v1/requests", grand.Token, pendingBody("g", "/srv/g")).request(t)
	ownReq := g.want(t, http.StatusAccepted, "POST", "/v1/requests", child.Token, pendingBody("c", "/srv/c")).request(t)

	// The stream carries the grandchild's and its own, in order; nothing else.
	for _, want := range []string{grandReq.ID, ownReq.ID} {
		var ev struct {
			ID string `json:"id"`
		}
		decodeInto(t, stream.nextNamed(t, "approval_required"), &ev)
		if ev.ID != want {
			t.Fatalf("the child's stream carried %s, want %s (parent %s, sibling %s)", ev.ID, want, parentReq.ID, siblingReq.ID)
		}
	}
	for _, id := range []string{parentReq.ID, siblingReq.ID} {
		g.want(t, http.StatusNotFound, "GET", "/v1/requests/"+id, child.Token, nil)
		g.want(t, http.StatusNotFound, "GET", "/v1/requests/"+id+"?wait=1s", child.Token, nil)
		g.want(t, http.StatusNotFound, "DELETE", "/v1/requests/"+id, child.Token, nil)
	}
	g.want(t, http.StatusNotFound, "GET", "/v1/requests/"+ownReq.ID, grand.Token, nil) // not upwards either
	g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+grandReq.ID, child.Token, nil)
	for _, id := range []string{parentReq.ID, siblingReq.ID, grandReq.ID, ownReq.ID} {
		g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+id, tokA1, nil)
	}
	g.want(t, http.StatusOK, "DELETE", "/v1/requests/"+grandReq.ID, child.Token, nil)
	rows, err := storage.ListAudit(context.Background(), g.App.DB, grandReq.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var cancelled bool
	for _, e := range rows {
		if e.Event == storage.AuditCancelled {
			cancelled = e.Detail["token_id"] == child.ID
		}
	}
	if !cancelled {
		t.Errorf("the child's cancel is not audited with its token_id: %+v", rows)
	}
	if got := g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+parentReq.ID, tokA1, nil).request(t); got.Status != approvals.StatusPending {
		t.Errorf("the parent's request is %s", got.Status)
	}
}

// TestAPI_Tokens_RevokedStreamCloses: a child token's open event stream
// ends with "event: revoked" at once when it is revoked on this replica,
// within one recheck when another process revokes it (the CLI), and at
// its expiry; its long-poll ends with 401 token_revoked.
func TestAPI_Tokens_RevokedStreamCloses(t *testing.T) {
	g := startE2E(t, e2eOptions{recheck: 50 * time.Millisecond})

	viaAPI := makeToken(t, g, tokA1, jsonBody{"ttl": "1h"})
	s := g.openEvents(t, viaAPI.Token)
	poll := g.async(t, "POST", "/v1/requests?wait=60s", viaAPI.Token, pendingBody("lp", "/srv/lp"))
	eventually(t, "the long-poll's request", func() bool {
		return g.countRows(t, `SELECT COUNT(*) FROM requests WHERE token_id = $1`, viaAPI.ID) == 1
	})
	g.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+viaAPI.ID, tokA1, nil)
	if ev := untilNamed(t, s, "revoked"); ev == "" {
		t.Error("no data on the revoked event")
	}
	wantClosed(t, s)
	select {
	case r := <-poll:
		if r.Status != http.StatusUnauthorized || r.apiError(t).Error.Code != "token_revoked" {
			t.Errorf("the long-poll of a revoked token: %d %s", r.Status, r.Body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll of a revoked token did not end")
	}

	// Another process (the CLI) revokes it: no notice here, the recheck finds it.
	viaCLI := makeToken(t, g, tokA1, jsonBody{"ttl": "1h"})
	s = g.openEvents(t, viaCLI.Token)
	other := policy.NewTokenStore(g.App.DB, policy.Normalizer{}, nil)
	if _, err := other.Revoke(context.Background(), policy.Caller{Agent: "a1"}, true, viaCLI.ID, "cli"); err != nil {
		t.Fatal(err)
	}
	s.nextNamed(t, "revoked")
	wantClosed(t, s)

	// Expiry.
	short := makeToken(t, g, tokA1, jsonBody{"ttl": "1s"})
	s = g.openEvents(t, short.Token)
	s.nextNamed(t, "revoked")
	wantClosed(t, s)
}

// TestReplicas_RevokedStreamCloses_Postgres: a child's stream open on
// one replica ends when the token is revoked on the other, through the
// change notice (the recheck is left at its 15 s, past this test's
// deadline for the event).
func TestReplicas_RevokedStreamCloses_Postgres(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	onPG := func(cfg *config.Config) { cfg.Storage.Driver, cfg.Storage.DSN = "postgres", dsn }
	one := startE2E(t, e2eOptions{mutate: onPG})
	two := startE2E(t, e2eOptions{mutate: onPG})
	child := makeToken(t, one, tokA1, jsonBody{"ttl": "1h"})
	s := two.openEvents(t, child.Token)
	one.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+child.ID, tokA1, nil)
	s.nextNamed(t, "revoked")
	wantClosed(t, s)
}

// wantClosed fails unless the stream ends (after what it still carries).
func wantClosed(tb testing.TB, s *sseStream) {
	tb.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, open := <-s.events:
			if !open {
				return
			}
		case <-deadline:
			tb.Fatal("the stream stayed open")
		}
	}
}

// untilNamed skips events until one named name and returns its data.
func untilNamed(tb testing.TB, s *sseStream, name string) string {
	tb.Helper()
	for {
		if ev := s.next(tb); ev.Name == name {
			return ev.Data
		}
	}
}
