package cards_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
)

// TestScopeChoice_DefaultIsGrantTarget: a card's chosen scope is the one
// the API grants when no scope is named, the request's GrantTarget (the
// agent's grant_target when it is among the scopes), wherever it stands in
// the list; its preview names it. A request whose GrantTarget is not
// listed (from before scopes) chooses the first.
func TestScopeChoice_DefaultIsGrantTarget(t *testing.T) {
	r := approvals.Request{ID: "r1", Agent: "a1", Capability: "fs:write", Target: "/tmp/report.txt", GrantTarget: "/tmp/*.txt",
		Autonomy: policy.Supervised, Status: approvals.StatusPending, CreatedAt: created,
		ExpiresAt: created.Add(10 * time.Minute), Scopes: []string{"/tmp/report.txt", "/tmp/*.txt", "/tmp/*"}}
	c := cards.New(r, tgLocale)
	if c.ScopeChoice != 1 || !strings.Contains(c.GrantPreview, "/tmp/*.txt") {
		t.Errorf("chosen scope %d, preview %q; want 1, naming /tmp/*.txt", c.ScopeChoice, c.GrantPreview)
	}
	r.GrantTarget = "/tmp/report.txt"
	if c := cards.New(r, tgLocale); c.ScopeChoice != 0 {
		t.Errorf("grant target the file itself: chosen scope %d, want 0", c.ScopeChoice)
	}
	r.Scopes = nil
	if c := cards.New(r, tgLocale); c.ScopeChoice != 0 || len(c.Scopes) != 1 {
		t.Errorf("no scopes: chosen %d of %q, want 0 of the grant target", c.ScopeChoice, c.Scopes)
	}
}
