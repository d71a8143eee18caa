package approvals_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
	"github.com/metnos/gateway/vaglio"
)

// TestReplicas_DecidedNowNeverAfterRevoke: a grant recorded on replica B
// allows A's next request at once, and once B's revoke has returned, A's
// next request is never allowed by it: 1,000 times over, on PostgreSQL,
// with A wired as the gateway wires it (the grant cache and the rules
// behind the change counters). Other requests keep A busy meanwhile, both
// decided at once (decided on the latest read of the counters, checked
// when stored) and plain decisions (behind the read barrier, keeping reads
// in flight), so A's request is often decided on a read from before the
// revoke and must then be found stale and decided again.
func TestReplicas_DecidedNowNeverAfterRevoke(t *testing.T) {
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	dbA := storagetest.OpenDialect(t, storage.Postgres)
	dbB := storagetest.Reopen(t, dbA)
	norm := policy.Normalizer{Home: "/home/owner"}
	grantsA := policy.NewGrantStore(dbA, norm, time.Now)
	rulesA := policy.NewRuleStore(dbA, nil, nil, time.Now)
	t.Cleanup(func() { rulesA.Close() })
	decider := &policy.Decider{Source: rulesA, Grants: policy.NewGrantCache(grantsA, storage.NewGrantsVersion(dbA)), Norm: norm}
	a := approvals.New(dbA, grantsA, decider, approvals.Options{})
	grantsB := policy.NewGrantStore(dbB, norm, time.Now)
	ctx := context.Background()
	owner := policy.Principal{Channel: "web", SenderID: "owner"}
	sub := func(sender, callID string) approvals.Submission {
		return approvals.Submission{Profile: profile, CallID: callID, Capability: "fs:write",
			Target: "/srv/inv/04.pdf", Channel: "web", SenderID: sender, Timeout: time.Hour}
	}

	// Background load on A, for another principal whose grant stands.
	if _, err := grantsB.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "else"},
		Capability: "fs:write", Target: "/srv/inv/*", GrantedBy: "b"}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := sub("else", fmt.Sprintf("bg-%d-%d", w, i))
				if w == 0 {
					if _, err := decider.Decide(ctx, policy.Input{Profile: s.Profile, Capability: s.Capability,
						Target: s.Target, Channel: s.Channel, SenderID: s.SenderID}); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if r, _, err := a.Submit(ctx, s); err != nil || r.Status != approvals.StatusAllowed {
					t.Errorf("background request: %s, %v; want allowed", r.Status, err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range 1000 {
		g, err := grantsB.Record(ctx, policy.NewGrant{Principal: owner, Capability: "fs:write", Target: "/srv/inv/*", GrantedBy: "b"})
		if err != nil {
			t.Fatal(err)
		}
		// Recorded on B, committed: A's next request is allowed by it.
		r, _, err := a.Submit(ctx, sub("owner", fmt.Sprintf("granted-%d", i)))
		if err != nil || r.Status != approvals.StatusAllowed || r.GrantID == nil || *r.GrantID != g.ID {
			t.Fatalf("round %d: after the grant on B: %s, %v; want allowed by grant %d", i, r.Status, err, g.ID)
		}
		if ok, err := grantsB.Revoke(ctx, g.ID, "revoked", "b"); !ok || err != nil {
			t.Fatalf("round %d: revoke: %v %v", i, ok, err)
		}
		// The revoke's commit returned: A's next request waits for a person.
		r, _, err = a.Submit(ctx, sub("owner", fmt.Sprintf("revoked-%d", i)))
		if err != nil || r.Status != approvals.StatusPending || r.GrantID != nil {
			t.Fatalf("round %d: after the revoke on B: %s by grant %v, %v; want pending", i, r.Status, r.GrantID, err)
		}
	}
	// Every stored request is as it was answered: none allowed by the
	// owner's grants after their revoke.
	var allowedAfter int
	if err := dbA.QueryRowContext(ctx, `SELECT count(*) FROM requests WHERE call_id LIKE 'revoked-%' AND status <> 'pending'`).Scan(&allowedAfter); err != nil {
		t.Fatal(err)
	}
	if allowedAfter != 0 {
		t.Fatalf("%d requests after a revoke stored as decided", allowedAfter)
	}
	if v, err := dbA.VerifyAudit(ctx, nil); err != nil || !v.OK {
		t.Fatalf("audit: %+v, %v", v, err)
	}
}

// countingVetter approves everything and counts the checks.
type countingVetter struct{ n atomic.Int64 }

func (v *countingVetter) Check(context.Context, vaglio.Request) vaglio.Verdict {
	v.n.Add(1)
	return vaglio.Verdict{Approved: true, Score: 1}
}

// TestReplicas_GuardRunsOncePerRequest: on PostgreSQL a request is first
// decided on the latest read of the counters, and one that needs a person
// is decided again behind the barrier; the guard (and so a configured
// judge) runs once for it all the same, as for one decided at once.
func TestReplicas_GuardRunsOncePerRequest(t *testing.T) {
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	db := storagetest.OpenDialect(t, storage.Postgres)
	norm := policy.Normalizer{Home: "/home/owner"}
	grants := policy.NewGrantStore(db, norm, time.Now)
	rules := policy.NewRuleStore(db, nil, nil, time.Now)
	t.Cleanup(func() { rules.Close() })
	guard := &countingVetter{}
	decider := &policy.Decider{Source: rules, Grants: policy.NewGrantCache(grants, storage.NewGrantsVersion(db)), Norm: norm, Vaglio: guard}
	svc := approvals.New(db, grants, decider, approvals.Options{})
	ctx := context.Background()
	owner := policy.Principal{Channel: "web", SenderID: "owner"}
	if _, err := grants.Record(ctx, policy.NewGrant{Principal: owner, Capability: "fs:write", Target: "/srv/inv/*", GrantedBy: "t"}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		target string
		want   approvals.Status
	}{
		{"/srv/inv/01.pdf", approvals.StatusAllowed}, // the barrier's first read: later ones take it
		{"/srv/inv/02.pdf", approvals.StatusAllowed},
		{"/srv/other.pdf", approvals.StatusPending},
		{"/srv/inv/03.pdf", approvals.StatusAllowed},
		{"/srv/other2.pdf", approvals.StatusPending},
	} {
		before := guard.n.Load()
		r, _, err := svc.Submit(ctx, approvals.Submission{Profile: profile, CallID: fmt.Sprint("g", i), Capability: "fs:write",
			Target: c.target, Channel: "web", SenderID: "owner", Timeout: time.Hour})
		if err != nil || r.Status != c.want {
			t.Fatalf("%s: %s, %v; want %s", c.target, r.Status, err, c.want)
		}
		if n := guard.n.Load() - before; n != 1 {
			t.Fatalf("%s (%s): the guard ran %d times, want once", c.target, r.Status, n)
		}
	}
}
