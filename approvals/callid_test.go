package approvals_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
)

// TestSubmit_CallIDConflict: a call_id reused for anything that asks for
// something else is refused with the earlier request, and nothing is
// stored; a retry that differs only in wording gets the same request.
func TestSubmit_CallIDConflict(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := approvals.Submission{
		Profile: profile, CallID: "x", Capability: "fs:write", Target: "/srv/out/a.txt", GrantTarget: "/srv/out/*.txt",
		Autonomy: policy.Supervised, Channel: "web", SenderID: "owner", Intent: "write a",
		Args: map[string]any{"path": "a", "mode": 1},
	}
	first, created, err := f.svc.Submit(ctx, base)
	if err != nil || !created || first.Status != approvals.StatusPending {
		t.Fatalf("first submit: %v created %v status %s", err, created, first.Status)
	}

	same := base
	same.Intent, same.Executor, same.Summary = "write a, again", "writer", "reworded"
	same.Args = map[string]any{"mode": 2, "path": "b"} // same keys, other values
	if r, created, err := f.svc.Submit(ctx, same); err != nil || created || r.ID != first.ID {
		t.Errorf("retry with the same call: %v created %v id %s, want %s", err, created, r.ID, first.ID)
	}

	cases := []struct {
		name  string
		edit  func(*approvals.Submission)
		field string
	}{
		{"capability", func(s *approvals.Submission) { s.Capability = "fs:read" }, "capability"},
		{"target", func(s *approvals.Submission) { s.Target = "/srv/out/b.txt" }, "target"},
		{"grant_target", func(s *approvals.Submission) { s.GrantTarget = "" }, "grant_target"},
		{"autonomy", func(s *approvals.Submission) { s.Autonomy = policy.ReadOnly }, "autonomy"},
		{"channel", func(s *approvals.Submission) { s.Channel = "telegram" }, "channel"},
		{"sender_id", func(s *approvals.Submission) { s.SenderID = "someone" }, "sender_id"},
		{"arg key added", func(s *approvals.Submission) { s.Args = map[string]any{"path": "a", "mode": 1, "force": true} }, "arg_keys"},
		{"arg key removed", func(s *approvals.Submission) { s.Args = nil }, "arg_keys"},
		{"llm:local allowed at once", func(s *approvals.Submission) {
			s.Capability, s.Target, s.GrantTarget, s.Args = "llm:local", "", "", nil
		}, "capability"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := base
			tc.edit(&sub)
			r, created, err := f.svc.Submit(ctx, sub)
			var conflict *approvals.CallIDConflictError
			if !errors.As(err, &conflict) || !errors.Is(err, approvals.ErrCallIDConflict) {
				t.Fatalf("got %v (request %s, created %v), want a call_id conflict", err, r.ID, created)
			}
			if conflict.CallID != "x" || conflict.Earlier.ID != first.ID || !slices.Contains(conflict.Fields, tc.field) {
				t.Errorf("conflict %+v, want call_id x, earlier %s, field %s", conflict, first.ID, tc.field)
			}
			if r.ID != "" || created {
				t.Errorf("a conflict returned request %q created %v", r.ID, created)
			}
		})
	}
	if n := f.count(t, `SELECT COUNT(*) FROM requests`); n != 1 {
		t.Errorf("%d requests stored, want 1", n)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM audit WHERE event = 'outcome'`); n != 1 {
		t.Errorf("%d outcome audit rows, want 1", n)
	}
}

// TestSubmit_CallIDConflictDecided: the case. "x" for llm:local is
// allowed at once; "x" again for an fs:write must not come back allowed.
func TestSubmit_CallIDConflictDecided(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	llm := approvals.Submission{Profile: profile, CallID: "x", Capability: "llm:local", Channel: "web", SenderID: "owner"}
	r, _, err := f.svc.Submit(ctx, llm)
	if err != nil || r.Status != approvals.StatusAllowed {
		t.Fatalf("llm:local: %v %s", err, r.Status)
	}
	write := approvals.Submission{Profile: profile, CallID: "x", Capability: "fs:write", Target: "/home/owner/.bashrc",
		Channel: "web", SenderID: "owner"}
	got, _, err := f.svc.Submit(ctx, write)
	if !errors.Is(err, approvals.ErrCallIDConflict) || got.Status == approvals.StatusAllowed {
		t.Fatalf("fs:write under llm:local's call_id: %v, status %q", err, got.Status)
	}
	if again, _, err := f.svc.Submit(ctx, llm); err != nil || again.ID != r.ID {
		t.Errorf("the idempotent retry of llm:local: %v %s", err, again.ID)
	}
}

// TestSubmit_CallIDConcurrentMixed: many submits of one call_id at once,
// half of them for another target. Exactly one request exists, every
// submit of its body gets it, every other one a conflict naming it.
func TestSubmit_CallIDConcurrentMixed(t *testing.T) {
	f := newFixture(t)
	subA := approvals.Submission{Profile: profile, CallID: "race", Capability: "fs:read", Target: "/srv/a",
		Channel: "web", SenderID: "owner"}
	subB := subA
	subB.Target = "/srv/b"
	const n = 24
	type result struct {
		target   string
		id       string
		conflict string // the earlier request's id on a conflict
		err      error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sub := subA
			if i%2 == 1 {
				sub = subB
			}
			r, _, err := f.svc.Submit(context.Background(), sub)
			res := result{target: sub.Target, id: r.ID}
			var c *approvals.CallIDConflictError
			if errors.As(err, &c) {
				res.conflict = c.Earlier.ID
			} else {
				res.err = err
			}
			results[i] = res
		})
	}
	wg.Wait()
	if got := f.count(t, `SELECT COUNT(*) FROM requests`); got != 1 {
		t.Fatalf("%d requests stored, want 1", got)
	}
	var stored approvals.Request
	for _, r := range results {
		if r.id != "" {
			stored, _ = f.svc.Get(context.Background(), r.id)
			break
		}
	}
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("submit %d: %v", i, r.err)
		case r.target == stored.Target && (r.id != stored.ID || r.conflict != ""):
			t.Errorf("submit %d of the stored call got %q (conflict %q), want %s", i, r.id, r.conflict, stored.ID)
		case r.target != stored.Target && (r.id != "" || r.conflict != stored.ID):
			t.Errorf("submit %d of the other call got %q (conflict %q), want a conflict naming %s", i, r.id, r.conflict, stored.ID)
		}
	}
	if got := f.count(t, `SELECT COUNT(*) FROM cards`); got != 0 {
		t.Errorf("%d cards for a request without messengers", got)
	}
}
