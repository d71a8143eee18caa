package approvals_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestReplicas_DecidedNowOnLeaseNeverAfterRevoke: as
// TestReplicas_DecidedNowNeverAfterRevoke, with both replicas holding
// their leases on the counters, as gateway serve does: A decides at once
// on its lease's counters (no check at commit), and once B's revoke has
// returned, A's next request is never allowed by it, 300 times over,
// while other requests keep A busy.
func TestReplicas_DecidedNowOnLeaseNeverAfterRevoke(t *testing.T) {
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	dbA := storagetest.OpenDialect(t, storage.Postgres)
	dbB := storagetest.Reopen(t, dbA)
	lctx, stopLeases := context.WithCancel(context.Background())
	var leases sync.WaitGroup
	for _, db := range []*storage.DB{dbA, dbB} {
		leases.Go(func() { _ = db.HoldLease(lctx, nil) })
	}
	t.Cleanup(func() { stopLeases(); leases.Wait() })
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
	if _, err := grantsB.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "else"},
		Capability: "fs:write", Target: "/srv/inv/*", GrantedBy: "b"}); err != nil {
		t.Fatal(err)
	}
	for held, changed := dbA.LeaseHeld(); !held; held, changed = dbA.LeaseHeld() {
		<-changed
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if r, _, err := a.Submit(ctx, sub("else", fmt.Sprintf("bg-%d-%d", w, i))); err != nil || r.Status != approvals.StatusAllowed {
					t.Errorf("background request: %s, %v; want allowed", r.Status, err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	leased := 0
	for i := range 300 {
		g, err := grantsB.Record(ctx, policy.NewGrant{Principal: owner, Capability: "fs:write", Target: "/srv/inv/*", GrantedBy: "b"})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := a.Submit(ctx, sub("owner", fmt.Sprintf("granted-%d", i)))
		if err != nil || r.Status != approvals.StatusAllowed || r.GrantID == nil || *r.GrantID != g.ID {
			t.Fatalf("round %d: after the grant on B: %s, %v; want allowed by grant %d", i, r.Status, err, g.ID)
		}
		if ok, err := grantsB.Revoke(ctx, g.ID, "revoked", "b"); !ok || err != nil {
			t.Fatalf("round %d: revoke: %v %v", i, ok, err)
		}
		before, _ := dbA.LeaseHeld()
		r, _, err = a.Submit(ctx, sub("owner", fmt.Sprintf("revoked-%d", i)))
		after, _ := dbA.LeaseHeld()
		if err != nil || r.Status != approvals.StatusPending || r.GrantID != nil {
			t.Fatalf("round %d: after the revoke on B: %s by grant %v, %v; want pending", i, r.Status, r.GrantID, err)
		}
		if before && after {
			leased++
		}
	}
	t.Logf("%d of 300 requests after a revoke decided with A's lease held throughout", leased)
	if leased == 0 {
		t.Fatal("A never held its lease: the test proved nothing about it")
	}
	if v, err := dbA.VerifyAudit(ctx, nil); err != nil || !v.OK {
		t.Fatalf("audit: %+v, %v", v, err)
	}
}
