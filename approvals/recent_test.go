package approvals_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// TestListRecent_NewestDecisionFirst: the listing of finished requests
// merges those decided on arrival (found by their creation time) with
// those decided later, by a person, and one whose decision the clock put
// before its creation (it went back): newest decision first, at every
// limit, pending requests left out.
func TestListRecent_NewestDecisionFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	owner := approvals.Actor{Channel: "web", ID: "owner", Name: "owner"}
	onArrival := func(callID string) approvals.Request {
		t.Helper()
		r, _, err := f.svc.Submit(ctx, approvals.Submission{Profile: profile, CallID: callID,
			Capability: "llm:local", Channel: "web", SenderID: "owner"})
		if err != nil || r.Status != approvals.StatusAllowed {
			t.Fatalf("submit %s: %v (%s)", callID, err, r.Status)
		}
		return r
	}
	decide := func(r approvals.Request, d approvals.Decision) {
		t.Helper()
		if _, err := f.svc.Decide(ctx, r.ID, d, owner); err != nil {
			t.Fatal(err)
		}
	}
	step := func() { f.clock.Add(time.Second) }
	p1 := f.submit(t, "p1", "/srv/a.txt", time.Hour)
	step()
	n1 := onArrival("n1")
	step()
	p2 := f.submit(t, "p2", "/srv/b.txt", time.Hour)
	step()
	n2 := onArrival("n2")
	step()
	decide(p1, approvals.Deny)
	step()
	n3 := onArrival("n3")
	step()
	f.submit(t, "p3", "/srv/c.txt", time.Hour)  // still pending: never listed
	f.clock.Add(-4*time.Second - time.Second/2) // back, between n1 and p2's creation
	decide(p2, approvals.AllowOnce)
	want := []string{n3.ID, p1.ID, n2.ID, p2.ID, n1.ID}
	for limit := 1; limit <= len(want)+1; limit++ {
		got, err := f.svc.ListRecent(ctx, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if w := want[:min(limit, len(want))]; fmt.Sprint(ids) != fmt.Sprint(w) {
			t.Errorf("ListRecent(%d) = %v, want %v", limit, ids, w)
		}
	}
}
