package approvals_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage/storagetest"
)

// remindingNotifier is a messenger that also takes reminders.
type remindingNotifier struct {
	fakeNotifier
	name      string
	rmu       sync.Mutex
	reminders []string
}

func (n *remindingNotifier) Name() string { return n.name }

func (n *remindingNotifier) Remind(_ context.Context, r approvals.Request, ref string) error {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	n.reminders = append(n.reminders, ref)
	return nil
}

func (n *remindingNotifier) reminded() int {
	n.rmu.Lock()
	defer n.rmu.Unlock()
	return len(n.reminders)
}

func newReminding(name string) *remindingNotifier {
	return &remindingNotifier{name: name, fakeNotifier: fakeNotifier{changed: make(chan struct{}, 1)}}
}

// TestTimers_EscalateAndRemind drives escalation and reminders with the
// injected clock: due times are stored with the request, a second service
// on the same database (a restart) acts on them, and they stop when the
// request is decided.
func TestTimers_EscalateAndRemind(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	c := newClock()
	route := approvals.Route{Capability: "*", Notify: []string{"tg"}, EscalateAfter: 5 * time.Minute,
		EscalateTo: []string{"sl", "web"}, RemindEvery: 2 * time.Minute}
	f := newFixtureOn(t, db, c, route)
	tg, sl := newReminding("tg"), newReminding("sl")
	f.svc.AddNotifier(tg)
	f.svc.AddNotifier(sl)
	r := f.submit(t, "t", "/srv/a.txt", time.Hour)
	if len(r.Notify) != 1 || r.Notify[0] != "tg" {
		t.Fatalf("notify %v, want the route's [tg]", r.Notify)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM cards WHERE request_id = $1`, r.ID); n != 1 {
		t.Fatalf("%d cards before escalation", n)
	}
	// Nothing is due yet.
	c.Add(time.Minute)
	if n, err := f.svc.EscalateDue(ctx); n != 0 || err != nil {
		t.Fatalf("escalated early: %d, %v", n, err)
	}
	if n, _ := f.svc.RemindDue(ctx); n != 0 {
		t.Fatalf("reminded early: %d", n)
	}
	// The card was posted: reminders go next to it.
	if _, err := db.ExecContext(ctx, `UPDATE cards SET ref = 'm1' WHERE request_id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute + time.Second) // 2m01s
	if n, _ := f.svc.RemindDue(ctx); n != 1 || tg.reminded() != 1 {
		t.Fatalf("reminder at 2m: %d, %d sent", n, tg.reminded())
	}
	if n, _ := f.svc.RemindDue(ctx); n != 0 {
		t.Fatal("reminded twice for one period")
	}

	// A restart: a new service with no routes acts on the stored due times.
	f2 := newFixtureOn(t, storagetest.Reopen(t, db), c)
	tg2, sl2 := newReminding("tg"), newReminding("sl")
	f2.svc.AddNotifier(tg2)
	f2.svc.AddNotifier(sl2)
	c.Add(3 * time.Minute) // 5m01s
	if n, err := f2.svc.EscalateDue(ctx); n != 1 || err != nil {
		t.Fatalf("escalation at 5m: %d, %v", n, err)
	}
	if n, _ := f.svc.EscalateDue(ctx); n != 0 {
		t.Fatal("escalated twice")
	}
	got, _ := f2.svc.Get(ctx, r.ID)
	if got.EscalatedAt == nil || len(got.Notify) != 2 || got.Notify[1] != "sl" {
		t.Fatalf("after escalation: escalated_at %v, notify %v", got.EscalatedAt, got.Notify)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM cards WHERE request_id = $1 AND channel = 'sl'`, r.ID); n != 1 {
		t.Fatalf("escalation card rows: %d", n)
	}
	if ev := f.auditEvents(t, r.ID); ev["escalated"] != 1 {
		t.Errorf("audit %v", ev)
	}
	if n, _ := f2.svc.RemindDue(ctx); n != 1 || tg2.reminded() != 1 {
		t.Fatalf("reminder at 5m: %d, %d sent", n, tg2.reminded())
	}
	// Decided: no more escalations or reminders.
	if _, err := f2.svc.Decide(ctx, r.ID, approvals.AllowOnce, owner); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	if n, _ := f2.svc.RemindDue(ctx); n != 0 || tg2.reminded() != 1 {
		t.Fatalf("reminded after the decision: %d", n)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM requests WHERE escalate_at IS NOT NULL OR remind_at IS NOT NULL`); n != 0 {
		t.Fatalf("%d requests still have due times", n)
	}
}

// TestTimers_RunTimers: the loop itself escalates a request in real time
// and the dispatcher posts the escalated card.
func TestTimers_RunTimers(t *testing.T) {
	fr := newFixtureOnClock(t, storagetest.Open(t), time.Now, approvals.Route{Capability: "*", Notify: []string{"tg"},
		EscalateAfter: time.Second, EscalateTo: []string{"sl"}})
	tg, sl := newReminding("tg"), newReminding("sl")
	fr.svc.AddNotifier(tg)
	fr.svc.AddNotifier(sl)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fr.svc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	r := fr.submit(t, "rt", "/srv/a.txt", time.Hour)
	sl.waitFor(t, "the escalated card", func() bool { return len(sl.posts) == 1 })
	if el := time.Since(start); el < time.Second {
		t.Fatalf("escalated card posted after %v, before escalate_after", el)
	}
	if sl.posts[0] != r.ID {
		t.Fatalf("posted %v", sl.posts)
	}
}

// TestReplicas_TimersOnce: three replicas on PostgreSQL passing over the
// same due times at once escalate once and remind once.
func TestReplicas_TimersOnce(t *testing.T) {
	route := approvals.Route{Capability: "*", Notify: []string{"tg"}, EscalateAfter: time.Minute,
		EscalateTo: []string{"sl"}, RemindEvery: time.Minute}
	notifiers := make([]*remindingNotifier, 3)
	rs := replicasWith(t, 3, []approvals.Route{route}, func(i int, f *fixture) {
		notifiers[i] = newReminding("tg")
		f.svc.AddNotifier(notifiers[i])
		f.svc.AddNotifier(newReminding("sl"))
	})
	ctx := context.Background()
	r := rs[0].submit(t, "timers", "/srv/t.txt", time.Hour)
	if _, err := rs[0].db.ExecContext(ctx, `UPDATE cards SET ref = 'm1' WHERE request_id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	rs[0].clock.Add(time.Minute + time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	escalated, reminded := 0, 0
	for _, f := range rs {
		wg.Go(func() {
			e, err1 := f.svc.EscalateDue(ctx)
			m, err2 := f.svc.RemindDue(ctx)
			if err1 != nil || err2 != nil {
				t.Errorf("timers: %v, %v", err1, err2)
			}
			mu.Lock()
			escalated, reminded = escalated+e, reminded+m
			mu.Unlock()
		})
	}
	wg.Wait()
	sent := 0
	for _, n := range notifiers {
		sent += n.reminded()
	}
	if escalated != 1 || reminded != 1 || sent != 1 {
		t.Fatalf("escalated %d, reminded %d, reminders sent %d; want 1, 1, 1", escalated, reminded, sent)
	}
	if n := rs[0].count(t, `SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = 'escalated'`, r.ID); n != 1 {
		t.Fatalf("%d escalated rows", n)
	}
}
