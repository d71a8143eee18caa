package approvals_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage/storagetest"
)

// quorumRoute is the route of these tests: fs:read needs two of four
// approvers.
var quorumRoute = approvals.Route{Capability: "fs:*", Quorum: 2,
	Approvers: []string{"telegram:1", "slack:U1", "web:owner", "agent:ops"}}

var (
	tg1   = approvals.Actor{Channel: "telegram", ID: "1", Name: "Roberto"}
	slk1  = approvals.Actor{Channel: "slack", ID: "U1", Name: "anna"}
	owner = approvals.Actor{Channel: "web", ID: "local", Name: "owner"}
)

func TestQuorum_TwoApprovers(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		first, snd approvals.Decision
		want       approvals.Decision
		grant      bool
	}{
		{"both allow always", approvals.AllowAlways, approvals.AllowAlways, approvals.AllowAlways, true},
		{"always then once", approvals.AllowAlways, approvals.AllowOnce, approvals.AllowOnce, false},
		{"once then always", approvals.AllowOnce, approvals.AllowAlways, approvals.AllowOnce, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixtureOn(t, storagetest.Open(t), newClock(), quorumRoute)
			r := f.submit(t, "q", "/srv/a.txt", time.Hour)
			if r.Quorum != 2 || len(r.Approvals) != 0 {
				t.Fatalf("new request: quorum %d, approvals %v", r.Quorum, r.Approvals)
			}
			got, err := f.svc.Decide(ctx, r.ID, tc.first, tg1)
			if err != nil || got.Status != approvals.StatusPending || got.AllowCount() != 1 {
				t.Fatalf("first allow: %v, %s, %d counted", err, got.Status, got.AllowCount())
			}
			// The same person again: counted once, nothing changes.
			_, err = f.svc.Decide(ctx, r.ID, approvals.AllowOnce, tg1)
			var counted *approvals.AlreadyCountedError
			if !errors.As(err, &counted) || !errors.Is(err, approvals.ErrAlreadyCounted) || counted.Request.AllowCount() != 1 {
				t.Fatalf("second tap by the same person: %v", err)
			}
			stored, _ := f.svc.Get(ctx, r.ID)
			if stored.Status != approvals.StatusPending || len(stored.Approvals) != 1 || stored.Approvals[0].Approver != "telegram:1" ||
				stored.Approvals[0].Decision != tc.first || stored.Approvals[0].Channel != "telegram" {
				t.Fatalf("after one approval: %s %+v", stored.Status, stored.Approvals)
			}
			got, err = f.svc.Decide(ctx, r.ID, tc.snd, slk1)
			if err != nil || got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != tc.want {
				t.Fatalf("second approver: %v, %s %v", err, got.Status, got.Decision)
			}
			if len(got.Approvals) != 2 {
				t.Fatalf("approvals %+v", got.Approvals)
			}
			if n := f.count(t, `SELECT COUNT(*) FROM grants WHERE request_id = $1`, r.ID); n != map[bool]int{true: 1}[tc.grant] {
				t.Fatalf("%d grants", n)
			}
			if tc.grant {
				g, err := f.grants.Get(ctx, *got.GrantID)
				if err != nil || !strings.Contains(g.GrantedBy, "Roberto") || !strings.Contains(g.GrantedBy, "anna") {
					t.Fatalf("granted_by %q, %v", g.GrantedBy, err)
				}
			}
			ev := f.auditEvents(t, r.ID)
			if ev["approval"] != 2 || ev["decision"] != 1 {
				t.Errorf("audit %v, want 2 approval rows and 1 decision", ev)
			}
			if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, owner); !errors.Is(err, approvals.ErrAlreadyDecided) {
				t.Errorf("a third approver after the quorum: %v", err)
			}
		})
	}
}

func TestQuorum_DenyAfterAllowDenies(t *testing.T) {
	ctx := context.Background()
	f := newFixtureOn(t, storagetest.Open(t), newClock(), quorumRoute)
	r := f.submit(t, "q", "/srv/a.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowAlways, tg1); err != nil {
		t.Fatal(err)
	}
	got, err := f.svc.Decide(ctx, r.ID, approvals.Deny, owner)
	if err != nil || got.Status != approvals.StatusDenied || len(got.Approvals) != 2 || got.Approvals[1].Decision != approvals.Deny {
		t.Fatalf("deny: %v, %s, %+v", err, got.Status, got.Approvals)
	}
	if n := f.count(t, `SELECT COUNT(*) FROM grants`); n != 0 {
		t.Errorf("%d grants after a deny", n)
	}
}

func TestQuorum_OnlyRouteApprovers(t *testing.T) {
	ctx := context.Background()
	f := newFixtureOn(t, storagetest.Open(t), newClock(), quorumRoute)
	r := f.submit(t, "q", "/srv/a.txt", time.Hour)
	for _, by := range []approvals.Actor{
		{Channel: "telegram", ID: "2", Name: "Mallory"},                 // a channel approver the route does not name
		{Channel: "telegram", ID: "3", Name: "Eve", Outsider: true},     // nobody's approver
		{Channel: "slack", ID: "U2", Name: "eve"},                       // another Slack user
		{Channel: "web", ID: "admin", Name: "guest"},                    // another web login
		{Channel: "api", ID: "metnos", Name: "metnos"},                  // an agent not named
		{Channel: "telegram", ID: "U1", Name: "same id, other channel"}, // identities are per channel
	} {
		for _, d := range []approvals.Decision{approvals.AllowOnce, approvals.Deny} {
			if _, err := f.svc.Decide(ctx, r.ID, d, by); !errors.Is(err, approvals.ErrNotApprover) {
				t.Errorf("%s %s: %v, want ErrNotApprover", by.Identity(), d, err)
			}
		}
	}
	if got, _ := f.svc.Get(ctx, r.ID); got.Status != approvals.StatusPending || len(got.Approvals) != 0 {
		t.Fatalf("refused taps changed the request: %s %+v", got.Status, got.Approvals)
	}
	if got, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "api", ID: "ops", Name: "ops"}); err != nil || got.AllowCount() != 1 {
		t.Fatalf("agent:ops: %v", err)
	}
}

// TestQuorum_OneIsAsToday: without a route, or with quorum 1, the first
// decision by a channel approver decides, and outsiders are refused.
func TestQuorum_OneIsAsToday(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.submit(t, "q", "/srv/a.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "telegram", ID: "9", Outsider: true}); !errors.Is(err, approvals.ErrNotApprover) {
		t.Fatalf("outsider: %v", err)
	}
	got, err := f.svc.Decide(ctx, r.ID, approvals.AllowAlways, tg1)
	if err != nil || got.Status != approvals.StatusAllowed || *got.Decision != approvals.AllowAlways || got.Quorum != 1 ||
		len(got.Approvals) != 1 || got.Approvals[0].By != tg1.String() {
		t.Fatalf("decide: %v %+v", err, got)
	}
	if ev := f.auditEvents(t, r.ID); ev["approval"] != 0 || ev["decision"] != 1 {
		t.Errorf("audit %v", ev)
	}
}

// fakeGroups is a messenger with user groups.
type fakeGroups struct {
	fakeNotifier
	members map[string][]string
	fail    bool
}

func (g *fakeGroups) Name() string           { return "slack" }
func (g *fakeGroups) IsGroup(id string) bool { return strings.HasPrefix(id, "S") }
func (g *fakeGroups) InGroup(_ context.Context, group, user string) (bool, error) {
	if g.fail {
		return false, errors.New("slack: 500")
	}
	for _, m := range g.members[group] {
		if m == user {
			return true, nil
		}
	}
	return false, nil
}

func TestQuorum_GroupApprovers(t *testing.T) {
	ctx := context.Background()
	f := newFixtureOn(t, storagetest.Open(t), newClock(),
		approvals.Route{Capability: "*", Quorum: 2, Approvers: []string{"slack:S0OPS", "telegram:1"}})
	g := &fakeGroups{members: map[string][]string{"S0OPS": {"U5", "U6"}}, fakeNotifier: fakeNotifier{changed: make(chan struct{}, 1)}}
	f.svc.AddNotifier(g)
	r := f.submit(t, "q", "/srv/a.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "slack", ID: "U7"}); !errors.Is(err, approvals.ErrNotApprover) {
		t.Fatalf("non-member: %v", err)
	}
	g.fail = true
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "slack", ID: "U5"}); !errors.Is(err, approvals.ErrNotApprover) {
		t.Fatalf("member while the group cannot be read: %v (want refused: fail closed)", err)
	}
	g.fail = false
	if got, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "slack", ID: "U5"}); err != nil || got.AllowCount() != 1 {
		t.Fatalf("member: %v", err)
	}
	// Two members of one group are two approvers.
	if got, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "slack", ID: "U6"}); err != nil || got.Status != approvals.StatusAllowed {
		t.Fatalf("second member: %v", err)
	}
}

// TestQuorum_ConcurrentTaps: approvers tapping at the same instant (each
// twice): every approver is counted at most once, the quorum is reached
// exactly once, one decision row, at most one grant. Also run on
// PostgreSQL by TestPostgres, and across replicas below.
func TestQuorum_ConcurrentTaps(t *testing.T) {
	f := newFixtureOn(t, storagetest.Open(t), newClock(), approvals.Route{Capability: "*", Quorum: 3})
	raceQuorum(t, []*fixture{f}, 3)
}

func TestReplicas_QuorumOnce(t *testing.T) {
	rs := replicasWith(t, 3, []approvals.Route{{Capability: "*", Quorum: 2}})
	raceQuorum(t, rs, 2)
}

func raceQuorum(t *testing.T, fs []*fixture, quorum int) {
	ctx := context.Background()
	for round := range 4 {
		r := fs[0].submit(t, fmt.Sprintf("race-%d", round), fmt.Sprintf("/srv/race-%d", round), time.Hour)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var oks, finals, counted, decided int
		for i := range 16 {
			wg.Go(func() {
				by := approvals.Actor{Channel: []string{"telegram", "slack"}[i%2], ID: fmt.Sprint(i / 2), Name: fmt.Sprint("p", i/2)}
				got, err := fs[i%len(fs)].svc.Decide(ctx, r.ID, approvals.AllowAlways, by)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					oks++
					if got.Status == approvals.StatusAllowed {
						finals++
					}
				case errors.Is(err, approvals.ErrAlreadyCounted):
					counted++
				case errors.Is(err, approvals.ErrAlreadyDecided):
					decided++
				default:
					t.Errorf("tap %d: %v", i, err)
				}
			})
			if i%2 == 1 { // the same two people again, at the same instant
				wg.Go(func() {
					by := approvals.Actor{Channel: []string{"telegram", "slack"}[i%2], ID: fmt.Sprint(i / 2)}
					got, err := fs[(i+1)%len(fs)].svc.Decide(ctx, r.ID, approvals.AllowOnce, by)
					mu.Lock()
					defer mu.Unlock()
					if err == nil && got.Status == approvals.StatusAllowed {
						finals++
					}
					if err != nil && !errors.Is(err, approvals.ErrAlreadyCounted) && !errors.Is(err, approvals.ErrAlreadyDecided) {
						t.Errorf("repeat tap %d: %v", i, err)
					}
				})
			}
		}
		wg.Wait()
		got, _ := fs[0].svc.Get(ctx, r.ID)
		if finals != 1 || got.Status != approvals.StatusAllowed {
			t.Fatalf("round %d: %d taps finished it (status %s), want exactly 1", round, finals, got.Status)
		}
		if got.AllowCount() != quorum {
			t.Fatalf("round %d: %d approvals stored, want %d: %+v", round, got.AllowCount(), quorum, got.Approvals)
		}
		seen := map[string]bool{}
		for _, a := range got.Approvals {
			if seen[a.Approver] {
				t.Fatalf("round %d: %s counted twice", round, a.Approver)
			}
			seen[a.Approver] = true
		}
		if n := fs[0].count(t, `SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = 'decision'`, r.ID); n != 1 {
			t.Fatalf("round %d: %d decision rows", round, n)
		}
		if n := fs[0].count(t, `SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = 'approval'`, r.ID); n != quorum {
			t.Fatalf("round %d: %d approval rows, want %d", round, n, quorum)
		}
		if n := fs[0].count(t, `SELECT COUNT(*) FROM grants WHERE request_id = $1`, r.ID); n > 1 {
			t.Fatalf("round %d: %d grants", round, n)
		}
	}
}

// TestQuorum_SurvivesRestart: the first approval is kept by a service
// opened again on the same database.
func TestQuorum_SurvivesRestart(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	c := newClock()
	f := newFixtureOn(t, db, c, quorumRoute)
	r := f.submit(t, "q", "/srv/a.txt", time.Hour)
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowAlways, tg1); err != nil {
		t.Fatal(err)
	}
	// The new process has no routes at all: what the route said is stored.
	f2 := newFixtureOn(t, storagetest.Reopen(t, db), c)
	if _, err := f2.svc.Decide(ctx, r.ID, approvals.AllowOnce, tg1); !errors.Is(err, approvals.ErrAlreadyCounted) {
		t.Fatalf("same approver after restart: %v", err)
	}
	if _, err := f2.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "telegram", ID: "2"}); !errors.Is(err, approvals.ErrNotApprover) {
		t.Fatalf("a non-route approver after restart: %v", err)
	}
	got, err := f2.svc.Decide(ctx, r.ID, approvals.AllowAlways, slk1)
	if err != nil || got.Status != approvals.StatusAllowed || *got.Decision != approvals.AllowAlways {
		t.Fatalf("second approval after restart: %v %+v", err, got)
	}
}

func TestRoute_Matches(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		rt       approvals.Route
		agent    string
		cap      string
		critical bool
		want     bool
	}{
		{approvals.Route{Capability: "*"}, "a", "fs:read", false, true},
		{approvals.Route{Capability: "fs:*"}, "a", "fs:write", false, true},
		{approvals.Route{Capability: "fs:*"}, "a", "fsx:write", false, false},
		{approvals.Route{Capability: "mail:send"}, "a", "mail:send", true, true},
		{approvals.Route{Capability: "mail:send"}, "a", "mail:read", false, false},
		{approvals.Route{Capability: "*", Agent: "b"}, "a", "fs:read", false, false},
		{approvals.Route{Capability: "*", Critical: &yes}, "a", "fs:read", false, false},
		{approvals.Route{Capability: "*", Critical: &no}, "a", "fs:read", false, true},
		{approvals.Route{Capability: "*", Critical: &yes}, "a", "code:exec", true, true},
	}
	for _, tc := range tests {
		if got := tc.rt.Matches(tc.agent, tc.cap, tc.critical); got != tc.want {
			t.Errorf("%+v matches (%s, %s, %v) = %v, want %v", tc.rt, tc.agent, tc.cap, tc.critical, got, tc.want)
		}
	}
	_ = policy.Supervised
}
