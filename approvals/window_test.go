package approvals_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
)

// TestWindow_NewestAndEveryPersonDenial: a replay's window is the newest
// requests up to its limit, never the oldest, and every request of the
// window a person denied however old, each once, oldest first.
func TestWindow_NewestAndEveryPersonDenial(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	start := f.clock.Now()
	var all []approvals.Request
	for i := range 20 {
		f.clock.Add(time.Second)
		all = append(all, f.submit(t, fmt.Sprintf("w-%d", i), fmt.Sprintf("/srv/w/%d.txt", i), time.Hour))
	}
	deny := func(r approvals.Request) {
		if _, err := f.svc.Decide(ctx, r.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner", Name: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	deny(all[1])  // old: outside the newest 5
	deny(all[18]) // among them
	got, err := f.svc.Window(ctx, start, 5)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	want := []string{all[1].ID, all[15].ID, all[16].ID, all[17].ID, all[18].ID, all[19].ID}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("window %v, want %v", ids, want)
	}
}
