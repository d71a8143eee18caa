package approvals_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// replicas opens n Services on one PostgreSQL database, as n gateway
// processes would, each listening to the others' notices (as gateway.App
// wires it), sharing one clock. setup, if any, runs on each before it
// listens (AddNotifier). It returns once every one listens.
func replicas(t *testing.T, n int, setup ...func(i int, f *fixture)) []*fixture {
	t.Helper()
	return replicasWith(t, n, nil, setup...)
}

// replicasWith is replicas whose Services have routes.
func replicasWith(t *testing.T, n int, routes []approvals.Route, setup ...func(i int, f *fixture)) []*fixture {
	t.Helper()
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	first := storagetest.OpenDialect(t, storage.Postgres)
	c := newClock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var out []*fixture
	for i := range n {
		db := first
		if i > 0 {
			db = storagetest.Reopen(t, first)
		}
		f := newFixtureOn(t, db, c, routes...)
		for _, s := range setup {
			s(i, f)
		}
		listening := make(chan struct{})
		var once sync.Once
		wg.Go(func() {
			_ = db.Listen(ctx, nil, func(msg string) {
				once.Do(func() { close(listening) })
				f.svc.Notice(ctx, msg)
			})
		})
		select {
		case <-listening:
		case <-time.After(10 * time.Second):
			t.Fatal("replica not listening after 10s")
		}
		out = append(out, f)
	}
	return out
}

// TestReplicas_WaitWokenByAnotherReplica: an agent long-polling on one
// replica is answered as soon as a person decides on another.
func TestReplicas_WaitWokenByAnotherReplica(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := context.Background()
	for i, d := range []approvals.Decision{approvals.AllowOnce, approvals.Deny, approvals.AllowAlways} {
		r := a.submit(t, fmt.Sprintf("w%d", i), fmt.Sprintf("/srv/w%d", i), time.Hour)
		type answer struct {
			r   approvals.Request
			err error
			at  time.Time
		}
		got := make(chan answer, 1)
		go func() {
			w, err := a.svc.Wait(ctx, r.ID, 30*time.Second)
			got <- answer{w, err, time.Now()}
		}()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if _, err := b.svc.Decide(ctx, r.ID, d, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
			t.Fatal(err)
		}
		select {
		case ans := <-got:
			if ans.err != nil || ans.r.Decision == nil || *ans.r.Decision != d {
				t.Fatalf("%s: waiter got %+v, %v", d, ans.r, ans.err)
			}
			t.Logf("%s on replica b → waiter on replica a: %s", d, ans.at.Sub(start))
		case <-time.After(5 * time.Second):
			t.Fatalf("%s on replica b did not wake the waiter on replica a within 5s", d)
		}
	}
}

// TestReplicas_EventsOnAnotherReplica: an SSE subscriber on one replica
// sees the requests created and resolved on another.
func TestReplicas_EventsOnAnotherReplica(t *testing.T) {
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := a.svc.Subscribe(ctx, profile.Agent)
	r := b.submit(t, "sse", "/srv/sse", time.Hour)
	next := func(want string) {
		t.Helper()
		select {
		case e := <-events:
			if e.Kind != want || e.Request.ID != r.ID {
				t.Fatalf("event %s %s, want %s %s", e.Kind, e.Request.ID, want, r.ID)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event within 5s", want)
		}
	}
	next(approvals.EventRequired)
	if _, err := b.svc.Cancel(context.Background(), r.ID, profile.Agent, ""); err != nil {
		t.Fatal(err)
	}
	next(approvals.EventResolved)
}

// TestReplicas_FirstDecisionWins: taps racing on three replicas: one
// wins, every other is told who decided, one decision row, at most one
// grant.
func TestReplicas_FirstDecisionWins(t *testing.T) {
	rs := replicas(t, 3)
	ctx := context.Background()
	for round := range 5 {
		r := rs[0].submit(t, fmt.Sprintf("race-%d", round), fmt.Sprintf("/srv/race-%d", round), time.Hour)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var wins int
		var losers []string
		for i := range 30 {
			wg.Go(func() {
				d := []approvals.Decision{approvals.AllowOnce, approvals.AllowAlways, approvals.Deny}[i%3]
				_, err := rs[i%3].svc.Decide(ctx, r.ID, d, approvals.Actor{Channel: "web", ID: fmt.Sprint(i)})
				mu.Lock()
				defer mu.Unlock()
				var already *approvals.AlreadyDecidedError
				switch {
				case err == nil:
					wins++
				case errors.As(err, &already):
					losers = append(losers, already.Request.DecidedBy)
				default:
					t.Errorf("decider %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 || len(losers) != 29 {
			t.Fatalf("round %d: %d wins, %d told, want 1 and 29", round, wins, len(losers))
		}
		for _, who := range losers[1:] {
			if who != losers[0] {
				t.Fatalf("losers told different winners: %q and %q", losers[0], who)
			}
		}
		if n := rs[0].count(t, `SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = 'decision'`, r.ID); n != 1 {
			t.Fatalf("round %d: %d decision rows", round, n)
		}
		if n := rs[0].count(t, `SELECT COUNT(*) FROM grants WHERE request_id = $1`, r.ID); n > 1 {
			t.Fatalf("round %d: %d grants", round, n)
		}
	}
}

// TestReplicas_ExpirySweepsTogether: every replica sweeps; each overdue
// request is expired once, and no sweep fails on another's work.
func TestReplicas_ExpirySweepsTogether(t *testing.T) {
	rs := replicas(t, 3)
	var ids []string
	for i := range 60 {
		ids = append(ids, rs[i%3].submit(t, fmt.Sprintf("exp-%d", i), fmt.Sprintf("/srv/exp-%d", i), 10*time.Second).ID)
	}
	rs[0].clock.Add(time.Minute)
	var wg sync.WaitGroup
	total := make(chan int, 6)
	for i := range 6 {
		wg.Go(func() {
			n, err := rs[i%3].svc.ExpireDue(context.Background())
			if err != nil {
				t.Errorf("sweep %d: %v", i, err)
			}
			total <- n
		})
	}
	wg.Wait()
	close(total)
	sum := 0
	for n := range total {
		sum += n
	}
	if sum != len(ids) {
		t.Errorf("the sweeps expired %d requests in all, want %d (each once)", sum, len(ids))
	}
	for _, id := range ids {
		if ev := rs[0].auditEvents(t, id); ev["expired"] != 1 {
			t.Errorf("%s: audit %v, want one expired row", id, ev)
		}
	}
}

// TestReplicas_DispatcherWokenByAnotherReplica: the leader's card
// dispatcher posts the card of a request made on another replica, and
// edits it when a third decides, at once rather than at its idle recheck.
func TestReplicas_DispatcherWokenByAnotherReplica(t *testing.T) {
	// No recheck within the test's bounds: only a wake posts the card.
	approvals.SetIdleRecheck(t, time.Hour)
	leader := &fakeNotifier{changed: make(chan struct{}, 1)}
	rs := replicas(t, 3, func(i int, f *fixture) {
		if i == 0 {
			f.svc.AddNotifier(leader)
		} else {
			f.svc.AddNotifier(&fakeNotifier{changed: make(chan struct{}, 1)}) // configured, never run
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rs[0].svc.RunDispatch(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // the dispatcher's first look found nothing
	r, _, err := rs[1].svc.Submit(context.Background(), approvals.Submission{
		Profile: profile, CallID: "card", Capability: "fs:read", Target: "/srv/card", Channel: "web", SenderID: "owner",
		Notify: []string{"fake"}, Timeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	leader.waitFor(t, "the leader to post the card (woken by another replica's request)", func() bool { return len(leader.posts) == 1 })
	if _, err := rs[2].svc.Decide(context.Background(), r.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}
	leader.waitFor(t, "the leader to edit the card (woken by another replica's decision)", func() bool { return len(leader.updates) == 1 })
}
