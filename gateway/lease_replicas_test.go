package gateway_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestReplicas_CheckNeverAllowsAfterRevoke_Postgres: a grant added on
// replica B allows A's next /v1/check, and once B's revoke has returned,
// A's next /v1/check never allows it: 1,000 times over, with A deciding
// on its lease (no read of the counters) in most rounds (logged; at least
// one), while other checks keep A busy. With the writers' wait for the
// leases' acknowledgements taken out it fails in its first rounds.
func TestReplicas_CheckNeverAllowsAfterRevoke_Postgres(t *testing.T) {
	dsn := storagetest.FreshSchema(t) // skips, saying why, without a server
	onPG := func(cfg *config.Config) { cfg.Storage.Driver, cfg.Storage.DSN = "postgres", dsn }
	a := startE2E(t, e2eOptions{mutate: onPG})
	b := startE2E(t, e2eOptions{mutate: onPG})
	waitLease(t, a)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if r := a.do(t, "POST", "/v1/check", tokA2, pendingBody("bg", "other.txt")); r.Status != http.StatusOK {
					t.Errorf("background check: %d %s", r.Status, r.Body)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	type answer struct {
		Outcome string `json:"outcome"`
		GrantID *int64 `json:"grant_id"`
	}
	check := func() answer {
		var ans answer
		decodeInto(t, string(a.want(t, http.StatusOK, "POST", "/v1/check", tokA1, pendingBody("chk", "x.txt")).Body), &ans)
		return ans
	}
	leased := 0
	for i := range 1000 {
		var g struct {
			ID int64 `json:"id"`
		}
		decodeInto(t, string(b.want(t, http.StatusCreated, "POST", "/v1/grants", tokAdmin, jsonBody{"channel": "web",
			"sender_id": "a1", "capability": "fs:read", "target": "/srv/data/**"}).Body), &g)
		if ans := check(); ans.Outcome != "allowed" || ans.GrantID == nil || *ans.GrantID != g.ID {
			t.Fatalf("round %d: after the grant on B: %+v, want allowed by %d", i, ans, g.ID)
		}
		b.want(t, http.StatusOK, "DELETE", fmt.Sprintf("/v1/grants/%d", g.ID), tokAdmin, nil)
		// The revoke's answer came back: A's next check must not allow.
		before, _ := a.App.DB.LeaseHeld()
		ans := check()
		after, _ := a.App.DB.LeaseHeld()
		if ans.Outcome == "allowed" {
			t.Fatalf("round %d: after the revoke on B: allowed by grant %d (A's lease held: %v, %v)", i, g.ID, before, after)
		}
		if before && after {
			leased++
		}
	}
	t.Logf("%d of 1000 checks after a revoke ran with A's lease held throughout", leased)
	if leased == 0 {
		t.Fatal("A never held its lease: the test proved nothing about it")
	}
}

// waitLease waits until g's replica holds its lease on the counters.
func waitLease(t *testing.T, g *e2eGateway) {
	t.Helper()
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	for {
		held, changed := g.App.DB.LeaseHeld()
		if held {
			return
		}
		select {
		case <-changed:
		case <-bound.C:
			t.Fatal("no lease after a minute")
		}
	}
}
