package approvals_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// TestGrantUses_CountedOnceFromTheAudit: a grant's uses are the requests
// it allowed, added up from the audit chain after a cursor that moves in
// the same transaction. A process that died before counting loses
// nothing (a new Service on the same database counts them); four
// counting at once add each use exactly once; counting again adds none;
// the request whose Allow always wrote the grant is no use of it.
func TestGrantUses_CountedOnceFromTheAudit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	first := f.submit(t, "first", "/srv/uses/a.txt", time.Hour)
	d, err := f.svc.Decide(ctx, first.ID, approvals.AllowAlways, approvals.Actor{Channel: "web", ID: "owner"})
	if err != nil || d.GrantID == nil {
		t.Fatalf("Allow always: %v %+v", err, d)
	}
	grant := *d.GrantID
	ask := func(n int, tag string) {
		for i := range n {
			r, created, err := f.svc.Submit(ctx, approvals.Submission{Profile: profile, CallID: fmt.Sprintf("%s-%d", tag, i),
				Capability: "fs:read", Target: "/srv/uses/a.txt", Channel: "web", SenderID: "owner", Timeout: time.Hour})
			if err != nil || !created || r.Status != approvals.StatusAllowed || r.GrantID == nil || *r.GrantID != grant {
				t.Fatalf("ask %s-%d: %v %v %+v", tag, i, err, created, r)
			}
		}
	}
	uses := func() int64 {
		t.Helper()
		g, err := f.grants.Get(ctx, grant)
		if err != nil {
			t.Fatal(err)
		}
		return g.Uses
	}
	ask(50, "before")
	// The process that made those decisions never counted them: another
	// one (a restart, another replica) does.
	other := newFixtureOn(t, f.db, f.clock)
	if n, err := other.svc.CountGrantUses(ctx); err != nil || n != 50 || uses() != 50 {
		t.Fatalf("after a crash: added %d (%v), uses %d; want 50", n, err, uses())
	}

	ask(30, "during")
	counters := []*approvals.Service{f.svc, other.svc, newFixtureOn(t, f.db, f.clock).svc, newFixtureOn(t, f.db, f.clock).svc}
	var added atomic.Int64
	var wg sync.WaitGroup
	for _, s := range counters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.CountGrantUses(ctx)
			if err != nil {
				t.Error(err)
			}
			added.Add(n)
		}()
	}
	wg.Wait()
	if added.Load() != 30 || uses() != 80 {
		t.Fatalf("four counting at once: added %d, uses %d; want 30 and 80", added.Load(), uses())
	}
	if n, err := f.svc.CountGrantUses(ctx); err != nil || n != 0 || uses() != 80 {
		t.Fatalf("counted again: added %d (%v), uses %d", n, err, uses())
	}
}
