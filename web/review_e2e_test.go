package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/web/push"
	"github.com/metnos/gateway/web/push/pushtest"
	"github.com/metnos/gateway/web/webtest"
)

// TestGrantReview_QueuedUntilPushed: the weekly review of grants is
// pushed once it falls due, to each device once: a push service that
// fails leaves it due (the device it reached is not pushed again), and a
// restart of the gateway pushes what is still due without anyone asking.
// A gateway that never pushed one does not push the week's already past.
func TestGrantReview_QueuedUntilPushed(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Now())
	g := newPushGW(t, clock, nil)
	anna, bob := g.user("anna"), g.user("bob")
	devA, devB := g.subscribe(anna, "Chrome · Android"), g.subscribe(bob, "Firefox")

	r := g.ask(webtest.FSWrite("/tmp/review/a.txt"))
	g.nextN(2)
	page := webtest.Page(t, anna, g.base)
	if status, body := webtest.PostForm(t, anna, g.base+"/web/decide", webtest.Form("csrf", webtest.CSRF(t, page), "id", r.ID, "decision", "allow_always"), nil); status != http.StatusOK {
		t.Fatalf("Allow always: %d %s", status, body)
	}
	g.nextN(2) // the outcome, on each device
	if err := g.app.ReviewIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	base := map[*pushtest.Device]int{devA: g.fake.Count(devA), devB: g.fake.Count(devB)}

	// Twelve weeks on, the grant expires within 7 days: a review is due.
	// The push service fails the first push: one device has it, the
	// other not, and the review stays due.
	clock.Add(84 * 24 * time.Hour)
	g.fake.Fail(1, http.StatusServiceUnavailable, "")
	if err := g.app.ReviewIfDue(ctx); err == nil {
		t.Fatal("a failed push left no error: the review would not be pushed again")
	}
	first := g.fake.Next(t, pushWait)
	var pl push.Payload
	if err := json.Unmarshal(first.Payload, &pl); err != nil || pl.Tag != "grants-review" {
		t.Fatalf("review push: %v %s", err, first.Payload)
	}
	// Restarted: the leader pushes what is still due, to the other device.
	g.restart()
	second := g.fake.Next(t, pushWait)
	if second.Device == first.Device {
		t.Fatalf("the device that had the review got it again: %s", second.Device)
	}
	if err := g.app.ReviewIfDue(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.app.SendGrantReview(ctx); err != nil {
		t.Fatal(err)
	}
	for d, n := range base {
		if got := g.fake.Count(d); got != n+1 {
			t.Errorf("device %s: %d pushes since the review fell due, want 1", d.ID, got-n)
		}
	}
}
