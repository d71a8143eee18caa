package approvals_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage/storagetest"
)

var webOwner = approvals.Actor{Channel: "web", ID: "admin", Name: "owner"}

// TestDecideChoice_Scope: Allow always writes the chosen scope; a scope the
// request does not list, a scope on Allow once, or a while not offered is
// refused and decides nothing.
func TestDecideChoice_Scope(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.submit(t, "c1", "/srv/inv/04.pdf", time.Minute)
	if want := []string{"/srv/inv/04.pdf", "/srv/inv/*.pdf", "/srv/inv/*"}; !slices.Equal(r.Scopes, want) {
		t.Fatalf("scopes %q, want %q", r.Scopes, want)
	}
	if want := []string{"2s", "1h"}; !slices.Equal(r.AllowFor, want) {
		t.Fatalf("allow_for %q, want %q", r.AllowFor, want)
	}
	for _, bad := range []approvals.Choice{
		{Decision: approvals.AllowAlways, Scope: "/srv/**"},
		{Decision: approvals.AllowAlways, Scope: "/srv/*"},
		{Decision: approvals.AllowAlways, Scope: "/srv/inv/*.PDF"},
		{Decision: approvals.AllowFor, Duration: 8 * time.Hour},
	} {
		if _, err := f.svc.DecideChoice(ctx, r.ID, bad, webOwner); !errors.Is(err, approvals.ErrNotOffered) {
			t.Errorf("%+v: err %v, want ErrNotOffered", bad, err)
		}
	}
	if _, err := f.svc.DecideChoice(ctx, r.ID, approvals.Choice{Decision: approvals.AllowOnce, Scope: "/srv/inv/*"}, webOwner); !errors.Is(err, approvals.ErrInvalid) {
		t.Errorf("a scope on Allow once: %v", err)
	}
	if got, _ := f.svc.Get(ctx, r.ID); got.Status != approvals.StatusPending || f.count(t, `SELECT COUNT(*) FROM grants`) != 0 {
		t.Fatalf("refused choices changed something: %s", got.Status)
	}
	got, err := f.svc.DecideChoice(ctx, r.ID, approvals.Choice{Decision: approvals.AllowAlways, Scope: "/srv/inv/*.pdf"}, webOwner)
	if err != nil || got.GrantID == nil {
		t.Fatalf("decide: %v %+v", err, got)
	}
	g, err := f.grants.Get(ctx, *got.GrantID)
	if err != nil || g.Target != "/srv/inv/*.pdf" || g.ExpiresAt == nil || !g.ExpiresAt.Equal(f.clock.Now().Add(grantTTL).Truncate(time.Microsecond)) {
		t.Fatalf("grant %+v, %v", g, err)
	}
	// The next request the scope covers is allowed by it; one it does not is asked.
	next, _, err := f.svc.Submit(ctx, approvals.Submission{Profile: profile, Capability: "fs:read", Target: "/srv/inv/05.pdf",
		Channel: "web", SenderID: "owner"})
	if err != nil || next.Status != approvals.StatusAllowed {
		t.Fatalf("covered request: %v %s", err, next.Status)
	}
	f.submit(t, "c2", "/srv/inv/05.txt", time.Minute)
}

// TestDecideChoice_AllowFor: the grant ends the chosen while after the
// decision (clock injected), on the default scope.
func TestDecideChoice_AllowFor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.submit(t, "c1", "/srv/a.txt", time.Minute)
	got, err := f.svc.DecideChoice(ctx, r.ID, approvals.Choice{Decision: approvals.AllowFor, Duration: 2 * time.Second}, webOwner)
	if err != nil || got.Decision == nil || *got.Decision != approvals.AllowFor || got.GrantID == nil {
		t.Fatalf("decide: %v %+v", err, got)
	}
	g, _ := f.grants.Get(ctx, *got.GrantID)
	if g.Target != "/srv/a.txt" || g.ExpiresAt == nil || !g.ExpiresAt.Equal(f.clock.Now().Add(2*time.Second).Truncate(time.Microsecond)) {
		t.Fatalf("grant %+v", g)
	}
	sub := approvals.Submission{Profile: profile, Capability: "fs:read", Target: "/srv/a.txt", Channel: "web", SenderID: "owner"}
	if again, _, _ := f.svc.Submit(ctx, sub); again.Status != approvals.StatusAllowed {
		t.Fatalf("within the while: %s", again.Status)
	}
	f.clock.Add(2 * time.Second)
	if later, _, _ := f.svc.Submit(ctx, sub); later.Status != approvals.StatusPending {
		t.Fatalf("after the while: %s, want asked again", later.Status)
	}
}

// TestDecideChoice_NeverForAlwaysCapabilities (seed 000): code:exec and
// mail:send offer no scope and no while, and refuse a grant of any
// duration.
func TestDecideChoice_NeverForAlwaysCapabilities(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct{ capability, target string }{{"code:exec", "npm test"}, {"mail:send", "a@example.com"}} {
		r, _, err := f.svc.Submit(ctx, approvals.Submission{Profile: profile, Capability: c.capability, Target: c.target,
			Channel: "web", SenderID: "owner"})
		if err != nil || r.Status != approvals.StatusPending {
			t.Fatalf("%s: %v %s", c.capability, err, r.Status)
		}
		if len(r.Scopes) != 0 || len(r.AllowFor) != 0 {
			t.Errorf("%s offers scopes %q, allow_for %q", c.capability, r.Scopes, r.AllowFor)
		}
		for _, ch := range []approvals.Choice{
			{Decision: approvals.AllowFor}, {Decision: approvals.AllowFor, Duration: 2 * time.Second},
			{Decision: approvals.AllowAlways}, {Decision: approvals.AllowAlways, Scope: c.target},
		} {
			if _, err := f.svc.DecideChoice(ctx, r.ID, ch, webOwner); !errors.Is(err, approvals.ErrAllowAlwaysRefused) {
				t.Errorf("%s %+v: %v, want ErrAllowAlwaysRefused", c.capability, ch, err)
			}
		}
	}
	if n := f.count(t, `SELECT COUNT(*) FROM grants`); n != 0 {
		t.Fatalf("%d grants written", n)
	}
}

// TestQuorum_ChoicesAgree: with a quorum, the grant is what every approver
// chose at least: the narrowest scope, the shortest while; mixed choices
// allow once.
func TestQuorum_ChoicesAgree(t *testing.T) {
	route := approvals.Route{Capability: "fs:read", Approvers: []string{"web:a", "web:b"}, Quorum: 2}
	for _, tc := range []struct {
		name   string
		a, b   approvals.Choice
		want   approvals.Decision
		target string
		ttl    time.Duration
	}{
		{"narrowest scope", approvals.Choice{Decision: approvals.AllowAlways, Scope: "/srv/q/*"},
			approvals.Choice{Decision: approvals.AllowAlways, Scope: "/srv/q/*.txt"}, approvals.AllowAlways, "/srv/q/*.txt", grantTTL},
		{"shortest while", approvals.Choice{Decision: approvals.AllowFor, Duration: time.Hour},
			approvals.Choice{Decision: approvals.AllowFor, Duration: 2 * time.Second}, approvals.AllowFor, "/srv/q/x.txt", 2 * time.Second},
		{"mixed", approvals.Choice{Decision: approvals.AllowAlways, Scope: "/srv/q/*"},
			approvals.Choice{Decision: approvals.AllowFor, Duration: time.Hour}, approvals.AllowOnce, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureOn(t, storagetest.Open(t), newClock(), route)
			ctx := context.Background()
			r := f.submit(t, "c1", "/srv/q/x.txt", time.Minute)
			if _, err := f.svc.DecideChoice(ctx, r.ID, tc.a, approvals.Actor{Channel: "web", Name: "a"}); err != nil {
				t.Fatal(err)
			}
			got, err := f.svc.DecideChoice(ctx, r.ID, tc.b, approvals.Actor{Channel: "web", Name: "b"})
			if err != nil || got.Decision == nil || *got.Decision != tc.want {
				t.Fatalf("decided %v, %v; want %s", got.Decision, err, tc.want)
			}
			if tc.target == "" {
				if got.GrantID != nil {
					t.Fatalf("grant written: %d", *got.GrantID)
				}
				return
			}
			g, _ := f.grants.Get(ctx, *got.GrantID)
			if g.Target != tc.target || !g.ExpiresAt.Equal(f.clock.Now().Add(tc.ttl).Truncate(time.Microsecond)) {
				t.Fatalf("grant %s until %v, want %s for %v", g.Target, g.ExpiresAt, tc.target, tc.ttl)
			}
		})
	}
}

// TestDecideChoice_AllowSession: Allow this session writes a grant on the
// default scope that answers only the same agent's requests in the same
// session, until approvals.session_ttl; another session, another agent or
// no session is asked again. A session is part of what a call_id names.
func TestDecideChoice_AllowSession(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sub := func(agent, session string) approvals.Submission {
		return approvals.Submission{Profile: policy.Profile{Agent: agent, Ceiling: policy.Supervised}, Capability: "fs:read",
			Target: "/srv/s/a.txt", Channel: "web", SenderID: "owner", SessionID: session}
	}
	noSession, _, _ := f.svc.Submit(ctx, sub("a1", ""))
	if _, err := f.svc.DecideChoice(ctx, noSession.ID, approvals.Choice{Decision: approvals.AllowSession}, webOwner); !errors.Is(err, approvals.ErrNotOffered) {
		t.Fatalf("allow_session without a session: %v", err)
	}
	r, _, err := f.svc.Submit(ctx, sub("a1", "sess-1"))
	if err != nil || r.SessionID != "sess-1" || !r.AllowSessionOffered() {
		t.Fatalf("submit: %v %+v", err, r)
	}
	got, err := f.svc.DecideChoice(ctx, r.ID, approvals.Choice{Decision: approvals.AllowSession}, webOwner)
	if err != nil || got.GrantID == nil || *got.Decision != approvals.AllowSession {
		t.Fatalf("decide: %v %+v", err, got)
	}
	g, _ := f.grants.Get(ctx, *got.GrantID)
	if g.Agent != "a1" || g.SessionID != "sess-1" || g.Target != "/srv/s/a.txt" ||
		!g.ExpiresAt.Equal(f.clock.Now().Add(12*time.Hour).Truncate(time.Microsecond)) {
		t.Fatalf("grant %+v", g)
	}
	for _, tc := range []struct {
		agent, session string
		want           approvals.Status
	}{
		{"a1", "sess-1", approvals.StatusAllowed},
		{"a1", "sess-2", approvals.StatusPending},
		{"a1", "", approvals.StatusPending},
		{"a2", "sess-1", approvals.StatusPending},
	} {
		r, _, err := f.svc.Submit(ctx, sub(tc.agent, tc.session))
		if err != nil || r.Status != tc.want {
			t.Errorf("%s/%q: %v %s, want %s", tc.agent, tc.session, err, r.Status, tc.want)
		}
	}
	f.clock.Add(12 * time.Hour)
	if r, _, _ := f.svc.Submit(ctx, sub("a1", "sess-1")); r.Status != approvals.StatusPending {
		t.Errorf("after session_ttl: %s, want asked again", r.Status)
	}
	// The same call_id in another session is another call.
	a, b := sub("a1", "sess-1"), sub("a1", "sess-9")
	a.CallID, b.CallID = "call-7", "call-7"
	if _, _, err := f.svc.Submit(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.Submit(ctx, b); !errors.Is(err, approvals.ErrCallIDConflict) {
		t.Errorf("call_id reused in another session: %v, want a conflict", err)
	}
	// Never for code:exec.
	x := sub("a1", "sess-1")
	x.Capability, x.Target = "code:exec", "npm test"
	rx, _, _ := f.svc.Submit(ctx, x)
	if rx.AllowSessionOffered() {
		t.Error("code:exec offers Allow this session")
	}
	if _, err := f.svc.DecideChoice(ctx, rx.ID, approvals.Choice{Decision: approvals.AllowSession}, webOwner); !errors.Is(err, approvals.ErrAllowAlwaysRefused) {
		t.Errorf("allow_session on code:exec: %v", err)
	}
}
