package approvals_test

import (
	"context"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// TestDigestCounts: the digest counts the requests of its window that
// needed a person, by how they ended (allowed, denied, expired, withdrawn)
// or that they still wait; requests of the day before are not counted.
func TestDigestCounts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	person := approvals.Actor{Channel: "web", ID: "owner"}
	old := f.submit(t, "old", "/srv/old.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, old.ID, approvals.AllowOnce, person); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(2 * time.Hour)
	from := f.clock.Now()
	for i, d := range []approvals.Decision{approvals.AllowOnce, approvals.AllowOnce, approvals.Deny} {
		r := f.submit(t, "d"+string(rune('a'+i)), "/srv/d"+string(rune('a'+i)), time.Hour)
		if _, err := f.svc.Decide(ctx, r.ID, d, person); err != nil {
			t.Fatal(err)
		}
	}
	f.submit(t, "expiring", "/srv/e.txt", 10*time.Second)
	gone := f.submit(t, "withdrawn", "/srv/w.txt", time.Hour)
	if _, err := f.svc.Cancel(ctx, gone.ID, profile.Agent, ""); err != nil {
		t.Fatal(err)
	}
	f.submit(t, "waiting", "/srv/p.txt", time.Hour)
	f.clock.Add(time.Minute)
	if n, err := f.svc.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("expire: %d, %v", n, err)
	}
	got, err := f.svc.DigestCounts(ctx, from, f.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := approvals.DigestCounts{Asked: 6, Allowed: 2, Denied: 1, Expired: 1, Cancelled: 1, Pending: 1}
	if got != want {
		t.Errorf("digest counts %+v, want %+v", got, want)
	}
}
