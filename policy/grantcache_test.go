package policy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestGrantCache_SeesOtherProcessRevoke: a revoke through a second
// database handle (as `gateway policy revoke` does from another process)
// takes effect on the very next lookup through the cache.
func TestGrantCache_SeesOtherProcessRevoke(t *testing.T) {
	ctx := context.Background()
	store, db := newStore(t, time.Now)
	cache := policy.NewGrantCache(store, storage.NewGrantsVersion(db))
	p := policy.Principal{Channel: "web", SenderID: "owner"}
	g, err := store.Record(ctx, policy.NewGrant{Principal: p, Capability: "fs:write", Target: "/a/inv/*", GrantedBy: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.FindMatching(ctx, p, policy.Session{}, "fs:write", "/a/inv/04.pdf"); got == nil || got.ID != g.ID {
		t.Fatalf("before revoke: %+v, want grant %d", got, g.ID)
	}
	other := storagetest.Reopen(t, db) // as another process, or another replica
	if ok, err := policy.NewGrantStore(other, testNorm, time.Now).Revoke(ctx, g.ID, "revoked", "cli"); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if got, _ := cache.FindMatching(ctx, p, policy.Session{}, "fs:write", "/a/inv/04.pdf"); got != nil {
		t.Fatalf("after revoke in another handle: grant %d still matches", got.ID)
	}
	// A new grant from elsewhere is seen at once too.
	g2, err := policy.NewGrantStore(other, testNorm, time.Now).Record(ctx, policy.NewGrant{Principal: p,
		Capability: "fs:write", Target: "/a/inv/04.pdf", GrantedBy: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := cache.FindMatching(ctx, p, policy.Session{}, "fs:write", "/a/inv/04.pdf"); got == nil || got.ID != g2.ID {
		t.Fatalf("new grant from another handle: %+v, want %d", got, g2.ID)
	}
}

// TestGrantCache_RevokeOnOtherReplicaNeverAllows: a grant revoked through
// another handle (replica B) is never used by a decision on A that started
// after the revoke's commit returned, 1,000 times over, while other
// decisions on A keep version reads in flight (so that the test's decision
// often arrives during a read that started before it, which must not
// serve it). A grant recorded on B is seen by A's next decision too.
func TestGrantCache_RevokeOnOtherReplicaNeverAllows(t *testing.T) {
	ctx := context.Background()
	storeA, dbA := newStore(t, time.Now)
	dbB := storagetest.Reopen(t, dbA)
	storeB := policy.NewGrantStore(dbB, testNorm, time.Now)
	rulesA := policy.NewRuleStore(dbA, nil, nil, time.Now)
	t.Cleanup(func() { rulesA.Close() })
	a := &policy.Decider{Source: rulesA, Grants: policy.NewGrantCache(storeA, storage.NewGrantsVersion(dbA)), Norm: testNorm}
	p := policy.Principal{Channel: "web", SenderID: "owner"}
	in := policy.Input{Profile: profile(policy.Supervised), Capability: "fs:write", Target: "/home/r/inv/04.pdf",
		Channel: p.Channel, SenderID: p.SenderID}

	// Background load on A: decisions for another principal.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			other := in
			other.SenderID = "someone-else"
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := a.Decide(ctx, other); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	for i := range 1000 {
		g, err := storeB.Record(ctx, policy.NewGrant{Principal: p, Capability: "fs:write", Target: "/home/r/inv/*", GrantedBy: "b"})
		if err != nil {
			t.Fatal(err)
		}
		// Recorded on B, committed: A's next decision uses it.
		if dec, err := a.Decide(ctx, in); err != nil || dec.Outcome != policy.Allowed || dec.GrantID != g.ID {
			t.Fatalf("round %d: after the grant on B: %s by grant %d, %v; want allowed by %d", i, dec.Outcome, dec.GrantID, err, g.ID)
		}
		if ok, err := storeB.Revoke(ctx, g.ID, "revoked", "b"); !ok || err != nil {
			t.Fatalf("round %d: revoke: %v %v", i, ok, err)
		}
		// The revoke's commit returned: A's next decision must not allow.
		if dec, err := a.Decide(ctx, in); err != nil || dec.Outcome == policy.Allowed {
			t.Fatalf("round %d: after the revoke on B: %s by grant %d, %v; want not allowed", i, dec.Outcome, dec.GrantID, err)
		}
	}
}

// TestGrantCache_AgreesWithStore: for random grants and targets, the cache
// answers exactly what the store answers, also after expiry and revokes.
func TestGrantCache_AgreesWithStore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	store, db := newStore(t, clock)
	cache := policy.NewGrantCache(store, storage.NewGrantsVersion(db))
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	dirs := []string{"/a", "/a/inv", "/a/inv/sub", "/b", "~/docs"}
	names := []string{"x.pdf", "04.pdf", "notes.txt", "*", "*.pdf", "**"}
	hosts := []string{"example.com", "*.example.com", "api.example.com", "a.b.example.com"}
	var ids []int64
	for i := 0; i < 200; i++ {
		p := policy.Principal{Channel: "web", SenderID: fmt.Sprint("u", rng.IntN(3))}
		ng := policy.NewGrant{Principal: p, GrantedBy: "t", TTL: time.Duration(rng.IntN(3)) * time.Hour}
		if rng.IntN(2) == 0 {
			ng.Capability, ng.Target = "fs:read", dirs[rng.IntN(len(dirs))]+"/"+names[rng.IntN(len(names))]
		} else {
			ng.Capability, ng.Target = "network:http", hosts[rng.IntN(len(hosts))]
		}
		g, err := store.Record(ctx, ng)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, g.ID)
	}
	check := func(stage string) {
		for i := 0; i < 500; i++ {
			p := policy.Principal{Channel: "web", SenderID: fmt.Sprint("u", rng.IntN(3))}
			capName, target := "fs:read", dirs[rng.IntN(len(dirs))]+"/"+[]string{"x.pdf", "04.pdf", "notes.txt", "q/r.pdf"}[rng.IntN(4)]
			if rng.IntN(2) == 0 {
				capName, target = "network:http", []string{"example.com", "api.example.com", "x.a.b.example.com", "other.org"}[rng.IntN(4)]
			}
			want, err1 := store.FindMatching(ctx, p, policy.Session{}, capName, target)
			got, err2 := cache.FindMatching(ctx, p, policy.Session{}, capName, target)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if (want == nil) != (got == nil) || want != nil && want.ID != got.ID {
				t.Fatalf("%s: %v %s %s: store %+v, cache %+v", stage, p, capName, target, want, got)
			}
		}
	}
	check("fresh")
	now = now.Add(90 * time.Minute) // the 1h grants expire
	check("after expiry")
	for _, id := range ids[:50] {
		if _, err := store.Revoke(ctx, id, "revoked", "t"); err != nil {
			t.Fatal(err)
		}
	}
	check("after revokes")
}

// TestGrantCache_SharedGrantTouched: the cache hands every decision the
// grant it holds, not a copy; decisions running together, each touching
// it (the clock moves past touchEvery between them, so every touch
// writes), read and write it under the cache's lock only (-race), and
// the database ends with the last use.
func TestGrantCache_SharedGrantTouched(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(2 * time.Minute)
		return now
	}
	store, db := newStore(t, clock)
	p := policy.Principal{Channel: "telegram", SenderID: "roberto"}
	g := record(t, store, policy.NewGrant{Principal: p, Capability: "fs:read", Target: "/home/r/docs/*", TTL: 1000 * time.Hour})
	d := &policy.Decider{Grants: policy.NewGrantCache(store, storage.NewGrantsVersion(db)), Norm: testNorm}
	in := policy.Input{Profile: policy.Profile{Agent: "metnos", Ceiling: policy.Supervised}, Capability: "fs:read",
		Target: "/home/r/docs/a.txt", Channel: p.Channel, SenderID: p.SenderID}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				dec, err := d.Decide(ctx, in)
				if err == nil && dec.GrantID != g.ID {
					err = fmt.Errorf("decided %s by grant %d, want grant %d", dec.Outcome, dec.GrantID, g.ID)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := store.Get(ctx, g.ID)
	if err != nil || got.LastUsedAt == nil {
		t.Fatalf("grant %d after 200 decisions: %+v, %v; want a last use", g.ID, got, err)
	}
}

// TestGrantCache_DecisionWordsAsStore: a decision a cached grant allows
// carries the words a decision through the store writes (its reason and
// trace), whether the cache wrote them for this decision or an earlier
// one, for decisions running together (-race) and several principals.
func TestGrantCache_DecisionWordsAsStore(t *testing.T) {
	ctx := context.Background()
	store, db := newStore(t, time.Now)
	var grants []policy.Grant
	for i := range 6 {
		p := policy.Principal{Channel: []string{"telegram", "slack"}[i%2], SenderID: fmt.Sprint("u", i%3)}
		grants = append(grants, record(t, store, policy.NewGrant{Principal: p, Capability: "fs:read",
			Target: fmt.Sprintf("/home/r/d%d/*", i), TTL: 1000 * time.Hour}))
	}
	cache := policy.NewGrantCache(store, storage.NewGrantsVersion(db))
	// A decider reading targets as the store does shares its reading
	// with the cache; one reading them otherwise (another home) asks
	// the cache as any caller does.
	other := policy.Normalizer{Home: "/home/elsewhere"}
	cached := []*policy.Decider{{Grants: cache, Norm: testNorm}, {Grants: cache, Norm: other}}
	direct := []*policy.Decider{{Grants: store, Norm: testNorm}, {Grants: store, Norm: other}}
	input := func(g policy.Grant, agent string) policy.Input {
		return policy.Input{Profile: policy.Profile{Agent: agent, Ceiling: policy.Supervised}, Capability: "fs:read",
			Target: strings.TrimSuffix(g.Target, "*") + "a.txt", Channel: g.Channel, SenderID: g.SenderID, DryRun: true}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 60 {
				g := grants[(w+i)%len(grants)]
				in := input(g, fmt.Sprint("agent", i%4))
				got, err1 := cached[i%2].Decide(ctx, in)
				want, err2 := direct[i%2].Decide(ctx, in)
				if err1 != nil || err2 != nil {
					errs <- fmt.Errorf("%v %v", err1, err2)
					return
				}
				if got.GrantID != g.ID || got.Outcome != want.Outcome || got.GrantID != want.GrantID ||
					got.Reason != want.Reason || !slices.Equal(got.Trace, want.Trace) {
					errs <- fmt.Errorf("through the cache: %s %q %+v; through the store: %s %q %+v (grant %d)",
						got.Outcome, got.Reason, got.Trace, want.Outcome, want.Reason, want.Trace, g.ID)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestGrantCache_TouchAtFindTime: a decision a cached grant allows
// records as the grant's last use the time its lookup read to find the
// grant unexpired (one read of the clock for both), and each decision
// past touchEvery writes it again; a grant that expired by that time
// allows nothing.
func TestGrantCache_TouchAtFindTime(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var reads []time.Time
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(2 * time.Minute)
		reads = append(reads, now)
		return now
	}
	store, db := newStore(t, clock)
	p := policy.Principal{Channel: "telegram", SenderID: "roberto"}
	g := record(t, store, policy.NewGrant{Principal: p, Capability: "fs:read", Target: "/home/r/docs/*", TTL: time.Hour})
	d := &policy.Decider{Grants: policy.NewGrantCache(store, storage.NewGrantsVersion(db)), Norm: testNorm}
	in := policy.Input{Profile: policy.Profile{Agent: "metnos", Ceiling: policy.Supervised}, Capability: "fs:read",
		Target: "/home/r/docs/a.txt", Channel: p.Channel, SenderID: p.SenderID}
	for i := range 40 {
		mu.Lock()
		first := len(reads)
		mu.Unlock()
		dec, err := d.Decide(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		during := slices.Clone(reads[first:])
		mu.Unlock()
		got, err := store.Get(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if dec.GrantID == 0 {
			// Expired: the lookup's time is at or past the grant's end.
			if during[len(during)-1].Before(*g.ExpiresAt) {
				t.Fatalf("decision %d: no grant at %v, before the grant's end %v", i, during[len(during)-1], *g.ExpiresAt)
			}
			return
		}
		if dec.GrantID != g.ID || got.LastUsedAt == nil || !got.LastUsedAt.Equal(during[len(during)-1]) {
			t.Fatalf("decision %d by grant %d: last use %v, want the last time read during it (%v)", i, dec.GrantID,
				got.LastUsedAt, during)
		}
		if !got.LastUsedAt.Before(*g.ExpiresAt) {
			t.Fatalf("decision %d: allowed by grant %d used at %v, past its end %v", i, g.ID, got.LastUsedAt, *g.ExpiresAt)
		}
	}
	t.Fatal("the one-hour grant never expired on a clock moving two minutes a read")
}
