package policy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
	"github.com/metnos/gateway/vaglio"
)

// ---------------------------------------------------------------------------
// Helpers shared by the policy tests.

// newClock is a clock the tests move by hand.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)) }

var testNorm = policy.Normalizer{Home: "/home/r"}

// newStore opens a fresh database (a real SQLite file in t.TempDir(), or
// a schema of its own on PostgreSQL in the PostgreSQL run, see
// TestPostgres) and a grants store on it.
func newStore(t testing.TB, now func() time.Time) (*policy.GrantStore, *storage.DB) {
	t.Helper()
	db := storagetest.Open(t)
	return policy.NewGrantStore(db, testNorm, now), db
}

func record(t testing.TB, s *policy.GrantStore, g policy.NewGrant) policy.Grant {
	t.Helper()
	if g.GrantedBy == "" {
		g.GrantedBy = "roberto"
	}
	out, err := s.Record(context.Background(), g)
	if err != nil {
		t.Fatalf("Record(%+v): %v", g, err)
	}
	return out
}

var roberto = policy.Principal{Channel: "telegram", SenderID: "roberto"}

func profile(l policy.Level) policy.Profile { return policy.Profile{Agent: "metnos", Ceiling: l} }

func input(l policy.Level, capability, target string) policy.Input {
	return policy.Input{
		Profile: profile(l), Capability: capability, Target: target,
		Channel: roberto.Channel, SenderID: roberto.SenderID,
	}
}

func decide(t *testing.T, d *policy.Decider, in policy.Input) policy.Decision {
	t.Helper()
	dec, err := d.Decide(context.Background(), in)
	if err != nil {
		t.Fatalf("Decide(%s %q at %s): %v", in.Capability, in.Target, in.Profile.Ceiling, err)
	}
	return dec
}

// fakeFinder is an in-memory policy.GrantFinder: a linear scan with the
// same matching as the store, so tests and properties run without SQLite.
type fakeFinder struct {
	mu      sync.Mutex
	norm    policy.Normalizer
	grants  []policy.Grant
	err     error
	finds   int
	touched []int64
}

func (f *fakeFinder) add(p policy.Principal, capability, target string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := int64(len(f.grants) + 1)
	f.grants = append(f.grants, policy.Grant{ID: id, Channel: p.Channel, SenderID: p.SenderID,
		Capability: capability, Target: target, Active: true})
	return id
}

func (f *fakeFinder) FindMatching(_ context.Context, p policy.Principal, _ policy.Session, capability, target string) (*policy.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finds++
	if f.err != nil {
		return nil, f.err
	}
	c, err := policy.Lookup(capability)
	if err != nil {
		return nil, err
	}
	for i := range f.grants {
		g := &f.grants[i]
		if g.Active && g.Channel == p.Channel && g.SenderID == p.SenderID && g.Capability == capability &&
			f.norm.MatchGrant(c.TargetKind, g.Target, target) {
			cp := *g
			return &cp, nil
		}
	}
	return nil, nil
}

func (f *fakeFinder) Touch(_ context.Context, g *policy.Grant) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.touched = append(f.touched, g.ID)
	return nil
}

// fakeVetter is a vaglio step with a fixed verdict that counts its calls.
type fakeVetter struct {
	mu      sync.Mutex
	verdict vaglio.Verdict
	calls   int
}

func (v *fakeVetter) Check(context.Context, vaglio.Request) vaglio.Verdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	return v.verdict
}

// ---------------------------------------------------------------------------
// Registry and table (SPEC §2, §3).

func TestRegistry_Canonical(t *testing.T) {
	want := []struct {
		name     string
		critical bool
		approval policy.Approval
		kind     policy.TargetKind
	}{
		{"fs:read", false, policy.ApprovalPerTarget, policy.KindPathGlob},
		{"fs:write", true, policy.ApprovalPerTarget, policy.KindPathGlob},
		{"code:exec", true, policy.ApprovalAlways, policy.KindExact},
		{"network:http", false, policy.ApprovalPerTarget, policy.KindHost},
		{"llm:local", false, policy.ApprovalNone, policy.KindNone},
		{"llm:online", false, policy.ApprovalPerTarget, policy.KindNone},
		{"mail:read", false, policy.ApprovalPerTarget, policy.KindExact},
		{"mail:send", true, policy.ApprovalAlways, policy.KindExact},
		{"channel:in", false, policy.ApprovalNone, policy.KindExact},
		{"channel:out", false, policy.ApprovalPerTarget, policy.KindExact},
		{"time:read", false, policy.ApprovalNone, policy.KindNone},
		{"parse:local", false, policy.ApprovalNone, policy.KindNone},
		{"calendar:read", false, policy.ApprovalPerTarget, policy.KindExact},
	}
	reg := policy.Registry()
	if len(reg) != len(want) {
		t.Fatalf("registry has %d entries, want %d", len(reg), len(want))
	}
	for i, w := range want {
		t.Run(w.name, func(t *testing.T) {
			got := reg[i]
			if got.Name != w.name || got.Critical != w.critical || got.DefaultApproval != w.approval || got.TargetKind != w.kind {
				t.Errorf("entry %d = %+v, want %+v", i, got, w)
			}
			if strings.TrimSpace(got.Description) == "" || strings.Contains(got.Description, "\n") {
				t.Errorf("description %q: want one non-empty line", got.Description)
			}
			byName, err := policy.Lookup(w.name)
			if err != nil || byName != got {
				t.Errorf("Lookup(%q) = %+v, %v; want %+v", w.name, byName, err, got)
			}
		})
	}
	for _, name := range []string{"", "fs:wirte", "FS:READ", "fs:*", "*", "fs:read ", "shell:exec"} {
		t.Run("unknown "+name, func(t *testing.T) {
			_, err := policy.Lookup(name)
			if !errors.Is(err, policy.ErrUnknownCapability) {
				t.Errorf("Lookup(%q) err = %v, want ErrUnknownCapability", name, err)
			}
		})
	}
	t.Run("Registry returns a copy", func(t *testing.T) {
		r := policy.Registry()
		r[0].Name, r[2].DefaultApproval = "evil", policy.ApprovalNone
		if c, _ := policy.Lookup("code:exec"); c.DefaultApproval != policy.ApprovalAlways {
			t.Fatal("mutating Registry()'s result changed the registry")
		}
		if policy.Registry()[0].Name != "fs:read" {
			t.Fatal("mutating Registry()'s result changed the registry")
		}
	})
}

const (
	A  = policy.Allowed
	D  = policy.Denied
	AR = policy.ApprovalRequired
)

// specMatrix is SPEC §3's matrix, hand-copied: ReadOnly, Supervised, Full.
var specMatrix = map[string][3]policy.Outcome{
	"fs:read":       {AR, AR, A},
	"fs:write":      {D, AR, A},
	"code:exec":     {D, AR, AR},
	"network:http":  {D, AR, A},
	"llm:local":     {A, A, A},
	"llm:online":    {D, AR, A},
	"mail:read":     {AR, AR, A},
	"mail:send":     {D, AR, AR},
	"channel:in":    {A, A, A},
	"channel:out":   {D, AR, A},
	"time:read":     {A, A, A},
	"parse:local":   {A, A, A},
	"calendar:read": {AR, AR, A},
}

func TestTable_MatchesSpec(t *testing.T) {
	rows := policy.Table()
	if len(rows) != 3 {
		t.Fatalf("Table() has %d rows, want 3", len(rows))
	}
	for i, l := range []policy.Level{policy.ReadOnly, policy.Supervised, policy.Full} {
		t.Run(l.String(), func(t *testing.T) {
			row := rows[i]
			if row.Level != l {
				t.Fatalf("row %d is %s, want %s", i, row.Level, l)
			}
			if len(row.Outcomes) != len(specMatrix) {
				t.Errorf("row has %d outcomes, want %d", len(row.Outcomes), len(specMatrix))
			}
			for name, want := range specMatrix {
				if got := row.Outcomes[name]; got != want[i] {
					t.Errorf("Table %s %s = %q, want %q", l, name, got, want[i])
				}
				c, _ := policy.Lookup(name)
				if got := policy.TableOutcome(l, c); got != want[i] {
					t.Errorf("TableOutcome(%s, %s) = %q, want %q", l, name, got, want[i])
				}
			}
		})
	}

	named := []struct {
		name  string
		level policy.Level
		cap   string
		want  policy.Outcome
	}{
		{"ReadOnly denies fs:write", policy.ReadOnly, "fs:write", D},
		{"ReadOnly denies code:exec", policy.ReadOnly, "code:exec", D},
		{"ReadOnly denies mail:send", policy.ReadOnly, "mail:send", D},
		{"Supervised needs approval for fs:write", policy.Supervised, "fs:write", AR},
		{"Supervised needs approval for mail:send", policy.Supervised, "mail:send", AR},
		{"Supervised needs approval for code:exec", policy.Supervised, "code:exec", AR},
		{"Supervised allows llm:local", policy.Supervised, "llm:local", A},
		{"Full keeps approval for mail:send", policy.Full, "mail:send", AR},
		{"Full keeps approval for code:exec", policy.Full, "code:exec", AR},
		{"Full allows fs:write", policy.Full, "fs:write", A},
	}
	for _, tc := range named {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := policy.Lookup(tc.cap)
			if got := policy.TableOutcome(tc.level, c); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("invalid level denies", func(t *testing.T) {
		for _, c := range policy.Registry() {
			if got := policy.TableOutcome(0, c); got != D {
				t.Errorf("TableOutcome(0, %s) = %q, want denied", c.Name, got)
			}
		}
	})
}

func TestParseLevel(t *testing.T) {
	cases := []struct {
		in      string
		want    policy.Level
		wantErr bool
	}{
		{"ReadOnly", policy.ReadOnly, false},
		{"readonly", policy.ReadOnly, false},
		{"read_only", policy.ReadOnly, false},
		{"Supervised", policy.Supervised, false},
		{"full", policy.Full, false},
		{"", 0, true},
		{"admin", 0, true},
		{"Full ", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := policy.ParseLevel(tc.in)
			if tc.wantErr {
				if !errors.Is(err, policy.ErrUnknownLevel) {
					t.Errorf("ParseLevel(%q) err = %v, want ErrUnknownLevel", tc.in, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseLevel(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if txt, _ := got.MarshalText(); string(txt) != tc.want.String() {
				t.Errorf("MarshalText = %q, want %q", txt, tc.want.String())
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Decide (SPEC §4).

func TestDecide_GrantRaisesApprovalRequired(t *testing.T) {
	s, _ := newStore(t, newClock().Now)
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: "/home/r/inv/*", TTL: time.Hour})
	d := &policy.Decider{Grants: s, Norm: testNorm}
	cases := []struct {
		name    string
		in      policy.Input
		want    policy.Outcome
		grantID int64
	}{
		{"covered target", input(policy.Supervised, "fs:write", "/home/r/inv/04.pdf"), A, g.ID},
		{"covered via ~", input(policy.Supervised, "fs:write", "~/inv/05.pdf"), A, g.ID},
		{"not covered", input(policy.Supervised, "fs:write", "/home/r/inv/sub/x"), AR, 0},
		{"escape attempt", input(policy.Supervised, "fs:write", "/home/r/inv/../../.ssh/id_rsa"), AR, 0},
		{"other capability", input(policy.Supervised, "fs:read", "/home/r/inv/04.pdf"), AR, 0},
		{"other principal", func() policy.Input {
			in := input(policy.Supervised, "fs:write", "/home/r/inv/04.pdf")
			in.Channel = "slack"
			return in
		}(), AR, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec := decide(t, d, tc.in)
			if dec.Outcome != tc.want || dec.GrantID != tc.grantID {
				t.Errorf("outcome %q grant %d, want %q grant %d (reason %q)", dec.Outcome, dec.GrantID, tc.want, tc.grantID, dec.Reason)
			}
			if dec.Table != AR {
				t.Errorf("Table = %q, want approval_required", dec.Table)
			}
		})
	}
}

func TestDecide_GrantNeverRaisesDenied(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "fs:write", "/home/r/inv/*")
	f.add(roberto, "network:http", "api.example.com")
	d := &policy.Decider{Grants: f, Norm: testNorm}
	cases := []struct {
		name string
		in   policy.Input
	}{
		{"ReadOnly fs:write", input(policy.ReadOnly, "fs:write", "/home/r/inv/04.pdf")},
		{"ReadOnly network:http", input(policy.ReadOnly, "network:http", "api.example.com")},
		{"requested ReadOnly under a Full ceiling", func() policy.Input {
			in := input(policy.Full, "fs:write", "/home/r/inv/04.pdf")
			in.Requested = policy.ReadOnly
			return in
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec := decide(t, d, tc.in)
			if dec.Outcome != D || dec.GrantID != 0 || dec.BlockedBy != policy.BlockedByPolicy {
				t.Errorf("got %q grant %d blocked_by %q, want denied by policy with no grant", dec.Outcome, dec.GrantID, dec.BlockedBy)
			}
		})
	}
	if len(f.touched) != 0 {
		t.Errorf("grants touched on denied requests: %v", f.touched)
	}
}

func TestDecide_AlwaysCapabilityIgnoresGrants(t *testing.T) {
	// A grant for an always capability cannot be written, but a GrantFinder
	// that returned one anyway must not be consulted.
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "code:exec", "git push")
	f.add(roberto, "mail:send", "boss@example.com")
	d := &policy.Decider{Grants: f, Norm: testNorm}
	for _, tc := range []struct{ cap, target string }{{"code:exec", "git push"}, {"mail:send", "boss@example.com"}} {
		for _, l := range []policy.Level{policy.Supervised, policy.Full} {
			t.Run(tc.cap+" at "+l.String(), func(t *testing.T) {
				dec := decide(t, d, input(l, tc.cap, tc.target))
				if dec.Outcome != AR || dec.GrantID != 0 {
					t.Errorf("got %q grant %d, want approval_required", dec.Outcome, dec.GrantID)
				}
			})
		}
	}
	if f.finds != 0 {
		t.Errorf("FindMatching called %d times for always capabilities", f.finds)
	}
}

func TestDecide_ProfileCeiling(t *testing.T) {
	d := &policy.Decider{Norm: testNorm}
	cases := []struct {
		name      string
		requested policy.Level
		ceiling   policy.Level
		cap       string
		wantLevel policy.Level
		want      policy.Outcome
	}{
		{"default is the ceiling", 0, policy.Supervised, "fs:write", policy.Supervised, AR},
		{"above the ceiling is capped", policy.Full, policy.Supervised, "fs:write", policy.Supervised, AR},
		{"above a ReadOnly ceiling is capped", policy.Full, policy.ReadOnly, "fs:write", policy.ReadOnly, D},
		{"below the ceiling is kept", policy.ReadOnly, policy.Full, "fs:write", policy.ReadOnly, D},
		{"equal", policy.Full, policy.Full, "fs:write", policy.Full, A},
		{"Supervised under Full", policy.Supervised, policy.Full, "network:http", policy.Supervised, AR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := "/home/r/x"
			if tc.cap == "network:http" {
				target = "api.example.com"
			}
			in := input(tc.ceiling, tc.cap, target)
			in.Requested = tc.requested
			dec := decide(t, d, in)
			if dec.Autonomy != tc.wantLevel || dec.Outcome != tc.want {
				t.Errorf("autonomy %s outcome %q, want %s %q", dec.Autonomy, dec.Outcome, tc.wantLevel, tc.want)
			}
			if dec.Autonomy > tc.ceiling {
				t.Errorf("autonomy %s above the ceiling %s", dec.Autonomy, tc.ceiling)
			}
		})
	}
}

func TestDecide_ProfileLists(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "fs:read", "/home/r/**")
	vet := &fakeVetter{verdict: vaglio.Verdict{Approved: true, Score: 1}}
	d := &policy.Decider{Grants: f, Vaglio: vet, Norm: testNorm,
		Rules: []policy.Rule{{Capability: "*", Target: "*", Action: policy.ActionApprove}}}
	cases := []struct {
		name  string
		allow []string
		deny  []string
		cap   string
		want  policy.Outcome
	}{
		{"deny_capabilities", nil, []string{"mail:send", "llm:local"}, "llm:local", D},
		{"deny beats allow", []string{"llm:local"}, []string{"llm:local"}, "llm:local", D},
		{"outside allow_capabilities", []string{"fs:read"}, nil, "llm:local", D},
		{"inside allow_capabilities", []string{"fs:read", "llm:local"}, nil, "llm:local", A},
		{"deny at Full with a grant and an approve rule", nil, []string{"fs:read"}, "fs:read", D},
		{"empty lists allow everything", nil, nil, "fs:read", A},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(policy.Full, tc.cap, "/home/r/notes.txt")
			in.Profile.Allow, in.Profile.Deny = tc.allow, tc.deny
			calls := vet.calls
			dec := decide(t, d, in)
			if dec.Outcome != tc.want {
				t.Fatalf("got %q (%s), want %q", dec.Outcome, dec.Reason, tc.want)
			}
			if tc.want == D {
				if dec.BlockedBy != policy.BlockedByPolicy || dec.GrantID != 0 {
					t.Errorf("blocked_by %q grant %d, want policy and no grant", dec.BlockedBy, dec.GrantID)
				}
				if vet.calls != calls {
					t.Error("vaglio consulted on a request the profile denied")
				}
				if last := dec.Trace[len(dec.Trace)-1]; last.Layer != "profile" || last.Outcome != D {
					t.Errorf("last trace step %+v, want the profile denying", last)
				}
			}
		})
	}
}

func TestDecide_TraceHasAStepPerLayer(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "fs:write", "/home/r/inv/*")
	cases := []struct {
		name   string
		vetter policy.Vetter
		in     policy.Input
		want   []string
		out    policy.Outcome
	}{
		{"grant path", &fakeVetter{verdict: vaglio.Verdict{Approved: true, Score: 0.8, Reason: "ok"}},
			input(policy.Supervised, "fs:write", "/home/r/inv/04.pdf"),
			[]string{"profile", "table", "rules", "grants", "combine", "vaglio"}, A},
		{"no grant", &fakeVetter{verdict: vaglio.Verdict{Approved: true, Score: 0.8}},
			input(policy.Supervised, "fs:write", "/home/r/other"),
			[]string{"profile", "table", "rules", "grants", "combine", "vaglio"}, AR},
		{"table allows", &fakeVetter{verdict: vaglio.Verdict{Approved: true, Score: 0.8}},
			input(policy.Full, "fs:write", "/home/r/other"),
			[]string{"profile", "table", "rules", "combine", "vaglio"}, A},
		{"table denies", &fakeVetter{verdict: vaglio.Verdict{Approved: true}},
			input(policy.ReadOnly, "fs:write", "/home/r/other"),
			[]string{"profile", "table"}, D},
		{"vaglio denies", &fakeVetter{verdict: vaglio.Verdict{Approved: false, BlockedBy: vaglio.BlockedByGuard, Reason: "forbidden path"}},
			input(policy.Supervised, "fs:write", "/home/r/inv/04.pdf"),
			[]string{"profile", "table", "rules", "grants", "combine", "vaglio"}, D},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Grants: f, Vaglio: tc.vetter, Norm: testNorm}
			dec := decide(t, d, tc.in)
			var layers []string
			for _, s := range dec.Trace {
				layers = append(layers, s.Layer)
				if s.Detail == "" {
					t.Errorf("step %q has no detail", s.Layer)
				}
			}
			if !slices.Equal(layers, tc.want) {
				t.Errorf("trace layers %v, want %v", layers, tc.want)
			}
			if dec.Outcome != tc.out {
				t.Errorf("outcome %q, want %q", dec.Outcome, tc.out)
			}
			if dec.Reason == "" {
				t.Error("empty reason")
			}
		})
	}
}

func TestDecide_Vaglio(t *testing.T) {
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/home/r/**"})
	real := vaglio.New(vaglio.Options{Home: "/home/r", Threshold: vaglio.DefaultThreshold})
	cases := []struct {
		name      string
		vetter    policy.Vetter
		in        policy.Input
		want      policy.Outcome
		blockedBy string
		grantID   int64
	}{
		{"guard denies a granted path", real, input(policy.Supervised, "fs:read", "~/.ssh/id_rsa"), D, policy.BlockedByGuard, 0},
		{"guard denies at Full", real, input(policy.Full, "fs:read", "/etc/shadow"), D, policy.BlockedByGuard, 0},
		{"guard denies a dangerous command", real, func() policy.Input {
			return policy.Input{Profile: profile(policy.Full), Capability: "code:exec", Target: "rm -rf /",
				Channel: "telegram", SenderID: "roberto"}
		}(), D, policy.BlockedByGuard, 0},
		{"clean granted path passes", real, input(policy.Supervised, "fs:read", "~/notes/todo.md"), A, "", g.ID},
		{"judge verdict without blocked_by defaults to judge",
			&fakeVetter{verdict: vaglio.Verdict{Approved: false, Score: 0.1, Reason: "low"}},
			input(policy.Full, "llm:local", ""), D, policy.BlockedByJudge, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Grants: s, Vaglio: tc.vetter, Norm: testNorm}
			dec := decide(t, d, tc.in)
			if dec.Outcome != tc.want || dec.BlockedBy != tc.blockedBy || dec.GrantID != tc.grantID {
				t.Errorf("got %q blocked_by %q grant %d, want %q %q %d (reason %q)",
					dec.Outcome, dec.BlockedBy, dec.GrantID, tc.want, tc.blockedBy, tc.grantID, dec.Reason)
			}
			if dec.Vaglio == nil {
				t.Error("Decision.Vaglio is nil although vaglio ran")
			}
		})
	}
	t.Run("a vaglio denial does not touch the grant", func(t *testing.T) {
		d := &policy.Decider{Grants: s, Vaglio: &fakeVetter{verdict: vaglio.Verdict{BlockedBy: vaglio.BlockedByJudge}}, Norm: testNorm}
		g2 := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: "/home/r/out/*"})
		decide(t, d, input(policy.Supervised, "fs:write", "/home/r/out/a"))
		got, err := s.Get(context.Background(), g2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastUsedAt != nil {
			t.Errorf("last_used_at = %v after a denied decision, want nil", got.LastUsedAt)
		}
	})
}

func TestDecide_ValidationErrors(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	d := &policy.Decider{Grants: f, Norm: testNorm}
	long := "/" + strings.Repeat("a", policy.MaxTargetBytes)
	cases := []struct {
		name  string
		in    policy.Input
		field string
		cause error
	}{
		{"unknown capability", input(policy.Full, "fs:wirte", "/x"), "capability", policy.ErrUnknownCapability},
		{"empty capability", input(policy.Full, "", "/x"), "capability", policy.ErrUnknownCapability},
		{"empty target for fs:read", input(policy.Full, "fs:read", ""), "target", policy.ErrBadTarget},
		{"empty target for network:http", input(policy.Full, "network:http", ""), "target", policy.ErrBadTarget},
		{"empty target for code:exec", input(policy.Full, "code:exec", ""), "target", policy.ErrBadTarget},
		{"NUL byte", input(policy.Full, "fs:read", "/home/r/a\x00b"), "target", policy.ErrBadTarget},
		{"NUL byte on a none capability", input(policy.Full, "llm:local", "\x00"), "target", policy.ErrBadTarget},
		{"over 4096 bytes", input(policy.Full, "fs:read", long), "target", policy.ErrBadTarget},
		{"unknown requested level", func() policy.Input {
			in := input(policy.Full, "fs:read", "/x")
			in.Requested = 9
			return in
		}(), "autonomy", policy.ErrUnknownLevel},
		{"no ceiling", input(0, "fs:read", "/x"), "agent", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := d.Decide(context.Background(), tc.in)
			if !errors.Is(err, policy.ErrInvalid) {
				t.Fatalf("err = %v, want errors.Is ErrInvalid", err)
			}
			if tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.cause)
			}
			var fe *policy.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %#v, want a FieldError for %q", err, tc.field)
			}
			if !strings.HasPrefix(err.Error(), tc.field+": ") {
				t.Errorf("message %q does not start with the field", err.Error())
			}
			if dec.Outcome == A {
				t.Error("an invalid request was allowed")
			}
		})
	}
	t.Run("exactly 4096 bytes is accepted", func(t *testing.T) {
		decide(t, d, input(policy.Full, "fs:read", long[:policy.MaxTargetBytes]))
	})
	t.Run("empty target for a none capability is fine", func(t *testing.T) {
		decide(t, d, input(policy.Full, "llm:online", ""))
	})
	if f.finds != 0 {
		t.Errorf("grants consulted %d times for invalid requests", f.finds)
	}
}

func TestDecide_StorageErrorNeverAllows(t *testing.T) {
	f := &fakeFinder{norm: testNorm, err: errors.New("disk on fire")}
	d := &policy.Decider{Grants: f, Norm: testNorm}
	dec, err := d.Decide(context.Background(), input(policy.Supervised, "fs:read", "/home/r/x"))
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want the storage error", err)
	}
	if errors.Is(err, policy.ErrInvalid) {
		t.Error("a storage error reported as invalid input")
	}
	if dec.Outcome == A {
		t.Error("allowed on a storage error")
	}
}

// ---------------------------------------------------------------------------
// Rules (SPEC §4 step 4 and 5).

func rule(capability, target string, a policy.Action) policy.Rule {
	return policy.Rule{Capability: capability, Target: target, Action: a}
}

func scoped(r policy.Rule, sender string) policy.Rule { r.SenderID = sender; return r }

func indexed(rs ...policy.Rule) []policy.Rule {
	for i := range rs {
		rs[i].Index = i
	}
	return rs
}

func subject(capability, target string) policy.RuleSubject {
	c, err := policy.Lookup(capability)
	if err != nil {
		panic(err)
	}
	return policy.RuleSubject{Capability: c, Target: target, Agent: "metnos", Channel: "telegram", SenderID: "roberto"}
}

func TestRules_FirstMatchWithinOwner(t *testing.T) {
	cases := []struct {
		name      string
		rules     []policy.Rule
		target    string
		want      policy.Action
		wantIndex int
	}{
		{"org: first match wins even if later is stricter", indexed(
			rule("fs:read", "/home/r/*", policy.ActionApprove),
			rule("fs:read", "/home/r/secret", policy.ActionRequireApproval),
		), "/home/r/secret", policy.ActionApprove, 0},
		{"org: a later block still wins", indexed(
			rule("fs:read", "/home/r/*", policy.ActionApprove),
			rule("fs:read", "/home/r/secret", policy.ActionBlock),
		), "/home/r/secret", policy.ActionBlock, 1},
		{"org: non-matching first rule skipped", indexed(
			rule("fs:write", "*", policy.ActionBlock),
			rule("fs:read", "/home/r/*", policy.ActionRequireApproval),
			rule("fs:read", "*", policy.ActionApprove),
		), "/home/r/a", policy.ActionRequireApproval, 1},
		{"user: first match wins", indexed(
			scoped(rule("fs:*", "*", policy.ActionApprove), "roberto"),
			scoped(rule("fs:read", "*", policy.ActionRequireApproval), "roberto"),
		), "/x", policy.ActionApprove, 0},
		{"no match", indexed(rule("fs:read", "/etc/*", policy.ActionBlock)), "/home/r/a", "", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := policy.EvalRules(testNorm, tc.rules, subject("fs:read", tc.target))
			if m.Action != tc.want {
				t.Fatalf("action %q, want %q", m.Action, tc.want)
			}
			if tc.wantIndex < 0 {
				if m.Rule != nil {
					t.Errorf("rule %+v, want none", m.Rule)
				}
				return
			}
			if m.Rule == nil || m.Rule.Index != tc.wantIndex {
				t.Errorf("rule %+v, want index %d", m.Rule, tc.wantIndex)
			}
		})
	}
}

func TestRules_MostRestrictiveAcrossOwners(t *testing.T) {
	a, ra, b := policy.ActionApprove, policy.ActionRequireApproval, policy.ActionBlock
	cases := []struct {
		name     string
		user     policy.Action
		org      policy.Action
		want     policy.Action
		wantUser bool
	}{
		{"user approve, org require", a, ra, ra, false},
		{"user approve, org block", a, b, b, false},
		{"user block, org approve", b, a, b, true},
		{"user require, org approve", ra, a, ra, true},
		{"both approve", a, a, a, true},
		{"user only", a, "", a, true},
		{"org only", "", ra, ra, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var rs []policy.Rule
			if tc.org != "" {
				rs = append(rs, rule("fs:read", "*", tc.org)) // org first in the file: order does not matter across owners
			}
			if tc.user != "" {
				rs = append(rs, scoped(rule("fs:read", "*", tc.user), "roberto"))
			}
			m := policy.EvalRules(testNorm, indexed(rs...), subject("fs:read", "/x"))
			if m.Action != tc.want {
				t.Fatalf("action %q, want %q", m.Action, tc.want)
			}
			if (m.Rule.Owner() == "user") != tc.wantUser {
				t.Errorf("deciding rule owner %q", m.Rule.Owner())
			}
		})
	}
}

func TestRules_Scope(t *testing.T) {
	cases := []struct {
		name  string
		rule  policy.Rule
		match bool
	}{
		{"sender matches", policy.Rule{Capability: "*", Target: "*", Action: "block", SenderID: "roberto"}, true},
		{"sender differs", policy.Rule{Capability: "*", Target: "*", Action: "block", SenderID: "anna"}, false},
		{"agent matches", policy.Rule{Capability: "*", Target: "*", Action: "block", Agent: "metnos"}, true},
		{"agent differs", policy.Rule{Capability: "*", Target: "*", Action: "block", Agent: "other"}, false},
		{"channel differs", policy.Rule{Capability: "*", Target: "*", Action: "block", Channel: "slack"}, false},
		{"all match", policy.Rule{Capability: "*", Target: "*", Action: "block", SenderID: "roberto", Agent: "metnos", Channel: "telegram"}, true},
		{"one of three differs", policy.Rule{Capability: "*", Target: "*", Action: "block", SenderID: "roberto", Agent: "metnos", Channel: "slack"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rule.Owner() != "user" {
				t.Errorf("scoped rule owner %q, want user", tc.rule.Owner())
			}
			m := policy.EvalRules(testNorm, []policy.Rule{tc.rule}, subject("fs:read", "/x"))
			if (m.Rule != nil) != tc.match {
				t.Errorf("matched = %v, want %v", m.Rule != nil, tc.match)
			}
		})
	}
	if rule("*", "*", "block").Owner() != "org" {
		t.Error("unscoped rule owner is not org")
	}
}

func TestRules_MatchesCapability(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "fs:read", true},
		{"*", "calendar:read", true},
		{"fs:*", "fs:read", true},
		{"fs:*", "fs:write", true},
		{"fs:*", "fsx:read", false},
		{"fs:*", "code:exec", false},
		{"mail:*", "mail:send", true},
		{"fs:read", "fs:read", true},
		{"fs:read", "fs:write", false},
		{"fs", "fs:read", false},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+" "+tc.name, func(t *testing.T) {
			if got := rule(tc.pattern, "*", "block").MatchesCapability(tc.name); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRules_BlockBeatsEverything(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "fs:write", "/home/r/**")
	f.add(roberto, "llm:online", "*")
	cases := []struct {
		name  string
		rules []policy.Rule
		in    policy.Input
	}{
		{"llm:local at Full", indexed(rule("llm:local", "*", policy.ActionBlock)), input(policy.Full, "llm:local", "")},
		{"time:read at ReadOnly via *", indexed(rule("*", "*", policy.ActionBlock)), input(policy.ReadOnly, "time:read", "")},
		{"fs:write at Full via fs:*", indexed(rule("fs:*", "/home/r/**", policy.ActionBlock)), input(policy.Full, "fs:write", "/home/r/a/b")},
		{"granted fs:write at Supervised", indexed(rule("fs:write", "/home/r/private/*", policy.ActionBlock)),
			input(policy.Supervised, "fs:write", "/home/r/private/diary")},
		{"granted llm:online", indexed(rule("llm:online", "*", policy.ActionBlock)), input(policy.Supervised, "llm:online", "")},
		{"org block beats user approve", indexed(
			scoped(rule("code:exec", "git *", policy.ActionApprove), "roberto"),
			rule("code:exec", "git push*", policy.ActionBlock),
		), input(policy.Full, "code:exec", "git push --force")},
		{"user block beats org approve", indexed(
			rule("channel:in", "*", policy.ActionApprove),
			scoped(rule("channel:in", "general", policy.ActionBlock), "roberto"),
		), input(policy.Full, "channel:in", "general")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vet := &fakeVetter{verdict: vaglio.Verdict{Approved: true, Score: 1}}
			d := &policy.Decider{Rules: tc.rules, Grants: f, Vaglio: vet, Norm: testNorm}
			dec := decide(t, d, tc.in)
			if dec.Outcome != D || dec.BlockedBy != policy.BlockedByPolicy || dec.GrantID != 0 {
				t.Errorf("got %q blocked_by %q grant %d, want denied by policy", dec.Outcome, dec.BlockedBy, dec.GrantID)
			}
			if vet.calls != 0 {
				t.Error("vaglio consulted on a blocked request")
			}
		})
	}
	if len(f.touched) != 0 {
		t.Errorf("grants touched by blocked requests: %v", f.touched)
	}
}

func TestRules_RequireApprovalTightensAllowed(t *testing.T) {
	cases := []struct {
		name  string
		rules []policy.Rule
		in    policy.Input
		want  policy.Outcome
	}{
		{"Full fs:write", indexed(rule("fs:write", "/home/r/**", policy.ActionRequireApproval)),
			input(policy.Full, "fs:write", "/home/r/a"), AR},
		{"Full fs:write outside the pattern", indexed(rule("fs:write", "/home/r/**", policy.ActionRequireApproval)),
			input(policy.Full, "fs:write", "/tmp/a"), A},
		{"llm:local at ReadOnly", indexed(rule("llm:*", "*", policy.ActionRequireApproval)),
			input(policy.ReadOnly, "llm:local", ""), AR},
		{"scope not matching", indexed(scoped(rule("fs:write", "*", policy.ActionRequireApproval), "anna")),
			input(policy.Full, "fs:write", "/home/r/a"), A},
		{"cannot loosen denied", indexed(rule("fs:write", "*", policy.ActionRequireApproval)),
			input(policy.ReadOnly, "fs:write", "/home/r/a"), D},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Rules: tc.rules, Norm: testNorm}
			if dec := decide(t, d, tc.in); dec.Outcome != tc.want {
				t.Errorf("got %q (%s), want %q", dec.Outcome, dec.Reason, tc.want)
			}
		})
	}
}

func TestRules_ApproveOnApprovalRequired(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	cases := []struct {
		name  string
		rules []policy.Rule
		in    policy.Input
		want  policy.Outcome
	}{
		{"fs:read at Supervised", indexed(rule("fs:read", "~/notes/**", policy.ActionApprove)),
			input(policy.Supervised, "fs:read", "/home/r/notes/a/b.md"), A},
		{"fs:read at ReadOnly", indexed(rule("fs:read", "~/notes/**", policy.ActionApprove)),
			input(policy.ReadOnly, "fs:read", "/home/r/notes/a.md"), A},
		{"code:exec at Full", indexed(rule("code:exec", "git status*", policy.ActionApprove)),
			input(policy.Full, "code:exec", "git status --short"), A},
		{"cannot loosen denied", indexed(rule("fs:write", "*", policy.ActionApprove)),
			input(policy.ReadOnly, "fs:write", "/home/r/a"), D},
		{"code:exec at ReadOnly stays denied", indexed(rule("code:exec", "git status*", policy.ActionApprove)),
			input(policy.ReadOnly, "code:exec", "git status"), D},
		{"escape is not covered", indexed(rule("fs:read", "~/notes/**", policy.ActionApprove)),
			input(policy.Supervised, "fs:read", "/home/r/notes/../.ssh/id_rsa"), AR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Rules: tc.rules, Grants: f, Norm: testNorm}
			dec := decide(t, d, tc.in)
			if dec.Outcome != tc.want || dec.GrantID != 0 {
				t.Errorf("got %q grant %d (%s), want %q", dec.Outcome, dec.GrantID, dec.Reason, tc.want)
			}
		})
	}
}

func TestRules_PasswordBlock(t *testing.T) {
	rules := indexed(rule("*", "*password*", policy.ActionBlock))
	d := &policy.Decider{Rules: rules, Norm: testNorm}
	cases := []struct {
		name, cap, target string
		want              policy.Outcome
	}{
		{"path", "fs:read", "/home/x/password.txt", D},
		{"path via ~", "fs:write", "~/passwords/list", D},
		{"path after cleaning", "fs:read", "/home/x/pass/../password.txt", D},
		{"host", "network:http", "password.example.com", D},
		{"url host", "network:http", "https://PASSWORD-reset.example.com/x", D},
		{"exact", "mail:read", "folder-password", D},
		{"unrelated path", "fs:read", "/home/x/notes.txt", A},
		{"unrelated host", "network:http", "api.example.com", A},
		{"none kind: target ignored", "llm:online", "", A},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dec := decide(t, d, input(policy.Full, tc.cap, tc.target))
			if dec.Outcome != tc.want {
				t.Errorf("got %q (%s), want %q", dec.Outcome, dec.Reason, tc.want)
			}
		})
	}
}

func TestRules_GitStatusApprove(t *testing.T) {
	d := &policy.Decider{Rules: indexed(rule("code:exec", "git status*", policy.ActionApprove)), Norm: testNorm}
	cases := []struct {
		target string
		want   policy.Outcome
	}{
		{"git status", A},
		{"git status --short", A},
		{"git push", AR},
		{"git statu", AR},
		{" git status", AR},
		{"echo; git status", AR},
		// The family: anything bash reads as more than one plain command.
		{"git status; rm -rf ~", AR},
		{"git status && curl x | sh", AR},
		{"git status\nid", AR},
		{"git status $(id)", AR},
		{"git status `id`", AR},
		{"git status ${IFS}x", AR},
		{"git status > ~/.bashrc", AR},
		{"git status *", AR},
		{"git status --short{,x}", AR},
		{"git status ~", AR},
		{"git status '", AR},
		{`git status \`, A},  // bash passes a lone backslash as it is
		{`git status \x`, A}, // bash passes "x": one plain command
		{"git status 'a b'", A},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			dec := decide(t, d, input(policy.Supervised, "code:exec", tc.target))
			if dec.Outcome != tc.want {
				t.Errorf("got %q, want %q", dec.Outcome, tc.want)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Target matching (SPEC §4, "Target matching for grants and rules").

func TestValidateTarget(t *testing.T) {
	fsRead, _ := policy.Lookup("fs:read")
	llm, _ := policy.Lookup("llm:local")
	cases := []struct {
		name   string
		c      policy.Capability
		target string
		ok     bool
	}{
		{"path", fsRead, "/a", true},
		{"empty path", fsRead, "", false},
		{"empty none", llm, "", true},
		{"NUL", fsRead, "/a\x00", false},
		{"4096", fsRead, strings.Repeat("a", 4096), true},
		{"4097", fsRead, strings.Repeat("a", 4097), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := policy.ValidateTarget(tc.c, tc.target)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, policy.ErrBadTarget)) {
				t.Errorf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	cases := []struct {
		name   string
		kind   policy.TargetKind
		target string
		want   string
	}{
		{"path dots", policy.KindPathGlob, "/a/inv/../../.ssh/id_rsa", "/.ssh/id_rsa"},
		{"path tilde", policy.KindPathGlob, "~/a/./b/", "/home/r/a/b"},
		{"bare tilde", policy.KindPathGlob, "~", "/home/r"},
		{"tilde user is not expanded", policy.KindPathGlob, "~bob/x", "~bob/x"},
		{"path above root", policy.KindPathGlob, "/../../etc", "/etc"},
		{"relative path cleaning to ~ stays relative", policy.KindPathGlob, "x/../~/.ssh", "./~/.ssh"},
		{"relative ~ is a fixed point", policy.KindPathGlob, "./~/.ssh", "./~/.ssh"},
		{"relative bare ~", policy.KindPathGlob, "a/../~", "./~"},
		{"host case", policy.KindHost, "API.Example.COM", "api.example.com"},
		{"host url", policy.KindHost, "https://API.example.com:8443/x?y#z", "api.example.com"},
		{"host port", policy.KindHost, "api.example.com:443", "api.example.com"},
		{"host trailing dot", policy.KindHost, "api.example.com.", "api.example.com"},
		{"host userinfo", policy.KindHost, "https://evil.com@good.com/", "good.com"},
		{"exact unchanged", policy.KindExact, "Git Status ", "Git Status "},
		{"none", policy.KindNone, "whatever", "*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := testNorm.Normalize(tc.kind, tc.target); got != tc.want {
				t.Errorf("Normalize(%s, %q) = %q, want %q", tc.kind, tc.target, got, tc.want)
			}
		})
	}
}

func TestMatchGrant(t *testing.T) {
	n := policy.Normalizer{Home: "/home/r"}
	P, H, E, N := policy.KindPathGlob, policy.KindHost, policy.KindExact, policy.KindNone
	cases := []struct {
		name            string
		kind            policy.TargetKind
		pattern, target string
		want            bool
	}{
		{"star in segment", P, "/a/inv/*", "/a/inv/04.pdf", true},
		{"star not across segments", P, "/a/inv/*", "/a/inv/sub/x", false},
		{"never escapes via ..", P, "/a/inv/*", "/a/inv/../../.ssh/id_rsa", false},
		{"escape back inside still matches", P, "/a/inv/*", "/a/x/../inv/04.pdf", true},
		{"star does not match the directory", P, "/a/inv/*", "/a/inv", false},
		{"star does not match the parent", P, "/a/inv/*", "/a", false},
		{"prefix is not a directory", P, "/a/inv/*", "/a/invoices/04.pdf", false},
		{"doublestar across segments", P, "/a/**", "/a/b/c/d.txt", true},
		{"doublestar middle", P, "/a/**/x.pdf", "/a/b/c/x.pdf", true},
		{"doublestar middle, other name", P, "/a/**/x.pdf", "/a/b/c/y.pdf", false},
		{"doublestar does not escape", P, "/a/**", "/a/../b/c", false},
		{"doublestar sibling prefix", P, "/a/**", "/ab/c", false},
		{"tilde in pattern", P, "~/inv/*", "/home/r/inv/04.pdf", true},
		{"tilde in target", P, "/home/r/inv/*", "~/inv/04.pdf", true},
		{"tilde both", P, "~/inv/*", "~/inv/04.pdf", true},
		{"tilde other home", P, "~/inv/*", "/home/x/inv/04.pdf", false},
		{"literal path equality", P, "/a/inv/04.pdf", "/a/inv/04.pdf", true},
		{"literal path cleaned", P, "/a/inv/04.pdf", "/a//inv/./04.pdf", true},
		{"literal path differs", P, "/a/inv/04.pdf", "/a/inv/05.pdf", false},
		{"relative target never matches absolute pattern", P, "/a/inv/*", "a/inv/04.pdf", false},
		{"relative ~ directory is not home", P, "/home/r/*", "x/../~/.bashrc", false},
		{"cleaned relative ~ pattern is not home", P, "x/../~/.bashrc", "/home/r/.bashrc", false},
		{"cleaned relative ~ pattern matches itself", P, "x/../~/.bashrc", "./~/.bashrc", true},
		{"question mark", P, "/a/inv/0?.pdf", "/a/inv/04.pdf", true},
		{"question mark not slash", P, "/a/inv?x", "/a/inv/x", false},
		{"host exact", H, "api.example.com", "api.example.com", true},
		{"host case-insensitive target", H, "api.example.com", "API.Example.com", true},
		{"host case-insensitive pattern", H, "API.example.com", "api.example.com", true},
		{"host url reduced", H, "api.example.com", "https://API.example.com:8443/x", true},
		{"host wildcard sub-domain", H, "*.example.com", "a.example.com", true},
		{"host wildcard deep sub-domain", H, "*.example.com", "a.b.example.com", true},
		{"host wildcard not the apex", H, "*.example.com", "example.com", false},
		{"host wildcard not a suffix lookalike", H, "*.example.com", "badexample.com", false},
		{"host wildcard url", H, "*.example.com", "http://x.EXAMPLE.com/path", true},
		{"host other", H, "api.example.com", "api.example.org", false},
		{"host suffix trick", H, "api.example.com", "api.example.com.evil.org", false},
		{"host bare star is not a wildcard", H, "*", "api.example.com", false},
		{"exact equal", E, "INBOX", "INBOX", true},
		{"exact case-sensitive", E, "INBOX", "inbox", false},
		{"exact glob is literal in grants", E, "git *", "git push", false},
		{"exact glob literal match", E, "git *", "git *", true},
		{"none always", N, "*", "anything", true},
		{"none empty", N, "", "", true},
		{"none ignores pattern", N, "x", "y", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := n.MatchGrant(tc.kind, tc.pattern, tc.target); got != tc.want {
				t.Errorf("MatchGrant(%s, %q, %q) = %v, want %v", tc.kind, tc.pattern, tc.target, got, tc.want)
			}
		})
	}
}

func TestMatchRule(t *testing.T) {
	P, H, E, N := policy.KindPathGlob, policy.KindHost, policy.KindExact, policy.KindNone
	cases := []struct {
		name            string
		kind            policy.TargetKind
		pattern, target string
		want            bool
	}{
		{"star", P, "*", "/anything/at/all", true},
		{"empty", E, "", "x", true},
		{"doublestar", H, "**", "x.com", true},
		{"password path", P, "*password*", "/home/x/password.txt", true},
		{"password host", H, "*password*", "password.example.com", true},
		{"password exact", E, "*password*", "cat password", true},
		{"path glob segment-aware", P, "/etc/*", "/etc/ssh/sshd_config", false},
		{"path glob doublestar", P, "/etc/**", "/etc/ssh/sshd_config", true},
		{"path glob cleaned target", P, "/etc/**", "/tmp/../etc/passwd", true},
		{"path glob escape", P, "/tmp/**", "/tmp/../etc/passwd", false},
		{"path literal", P, "/etc/passwd", "/etc//passwd", true},
		{"path tilde", P, "~/notes/**", "/home/r/notes/a.md", true},
		{"slashless pattern crosses /", P, "*.pem", "/home/r/keys/a.pem", true},
		{"host sub-domain", H, "*.example.com", "a.b.example.com", true},
		{"host sub-domain not apex", H, "*.example.com", "example.com", false},
		{"host glob", H, "api.*", "API.example.com", true},
		{"exact git status", E, "git status*", "git status --short", true},
		{"exact git push", E, "git status*", "git push", false},
		{"exact question", E, "gen?ral", "general", true},
		{"exact is case-sensitive", E, "git *", "GIT push", false},
		{"none", N, "x", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := testNorm.MatchRule(tc.kind, tc.pattern, tc.target); got != tc.want {
				t.Errorf("MatchRule(%s, %q, %q) = %v, want %v", tc.kind, tc.pattern, tc.target, got, tc.want)
			}
		})
	}
}

func TestGrantTarget(t *testing.T) {
	P, H, E, N := policy.KindPathGlob, policy.KindHost, policy.KindExact, policy.KindNone
	cases := []struct {
		name              string
		kind              policy.TargetKind
		target, suggested string
		want              string
		taken             bool
	}{
		{"no suggestion", P, "/a/inv/04.pdf", "", "/a/inv/04.pdf", false},
		{"no suggestion cleans", P, "~/inv/./04.pdf", "", "/home/r/inv/04.pdf", false},
		{"narrow glob accepted", P, "/a/inv/04.pdf", "/a/inv/*.pdf", "/a/inv/*.pdf", true},
		{"star in last segment accepted", P, "/a/inv/04.pdf", "/a/inv/*", "/a/inv/*", true},
		{"tilde suggestion expanded", P, "/home/r/inv/04.pdf", "~/inv/*", "/home/r/inv/*", true},
		{"doublestar refused", P, "/a/inv/04.pdf", "/a/**", "/a/inv/04.pdf", false},
		{"doublestar last refused", P, "/a/inv/04.pdf", "/a/inv/**", "/a/inv/04.pdf", false},
		{"root star refused", P, "/x", "/*", "/x", false},
		{"wildcard directory refused", P, "/a/inv/04.pdf", "/a/*/04.pdf", "/a/inv/04.pdf", false},
		{"not covering refused", P, "/a/inv/04.pdf", "/a/other/*", "/a/inv/04.pdf", false},
		{"not covering extension refused", P, "/a/inv/04.pdf", "/a/inv/*.txt", "/a/inv/04.pdf", false},
		{"relative refused", P, "inv/04.pdf", "inv/*", "inv/04.pdf", false},
		{"dotdot suggestion cleaned then judged", P, "/a/inv/04.pdf", "/a/inv/x/../*", "/a/inv/*", true},
		{"dotdot suggestion widening refused", P, "/a/inv/04.pdf", "/a/inv/../*", "/a/inv/04.pdf", false},
		{"literal suggestion equal to target", P, "/a/inv/04.pdf", "/a/inv/04.pdf", "/a/inv/04.pdf", true},
		{"host wildcard accepted", H, "api.example.com", "*.example.com", "*.example.com", true},
		{"host wildcard case folded", H, "API.example.com", "*.Example.COM", "*.example.com", true},
		{"host tld wildcard refused", H, "api.example.com", "*.com", "api.example.com", false},
		{"host not covering refused", H, "api.example.com", "*.example.org", "api.example.com", false},
		{"host apex not covered by wildcard", H, "example.com", "*.example.com", "example.com", false},
		{"host star refused", H, "api.example.com", "*", "api.example.com", false},
		{"host inner glob refused", H, "api.example.com", "api.*.com", "api.example.com", false},
		{"host url target", H, "https://API.example.com:8443/x", "", "api.example.com", false},
		{"host url target, literal suggestion", H, "https://API.example.com:8443/x", "api.example.com", "api.example.com", true},
		{"exact ignores suggestion", E, "git status", "git *", "git status", false},
		{"exact ignores even equal suggestion", E, "INBOX", "INBOX", "INBOX", false},
		{"none is capability-wide", N, "", "", "*", false},
		{"none with suggestion", N, "x", "y", "*", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, taken := testNorm.GrantTarget(tc.kind, tc.target, tc.suggested)
			if got != tc.want || taken != tc.taken {
				t.Errorf("GrantTarget(%s, %q, %q) = %q, %v; want %q, %v", tc.kind, tc.target, tc.suggested, got, taken, tc.want, tc.taken)
			}
			// Whatever Allow always writes covers the target it was asked for.
			if tc.kind != N && !testNorm.MatchGrant(tc.kind, got, tc.target) {
				t.Errorf("result %q does not cover the target %q", got, tc.target)
			}
		})
	}
}

func TestAnchor(t *testing.T) {
	P, H, E, N := policy.KindPathGlob, policy.KindHost, policy.KindExact, policy.KindNone
	cases := []struct {
		name    string
		kind    policy.TargetKind
		pattern string
		want    string
	}{
		{"literal path", P, "/a/inv/04.pdf", "/a/inv/04.pdf"},
		{"glob path", P, "/a/inv/*", "/a/inv"},
		{"doublestar path", P, "/a/**", "/a"},
		{"root glob", P, "/*", "/"},
		{"glob in middle", P, "/a/*/c", "/a"},
		{"tilde", P, "~/x/*", "/home/r/x"},
		{"relative glob", P, "x/*", ""},
		{"escaped slash before the glob", P, `/a\/b/*`, "/"},
		{"host literal", H, "API.example.com", "api.example.com"},
		{"host wildcard", H, "*.example.com", "*.example.com"},
		{"host other glob", H, "api.*", ""},
		{"exact literal", E, "INBOX", "INBOX"},
		{"exact glob", E, "git *", ""},
		{"none", N, "whatever", "*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := testNorm.Anchor(tc.kind, tc.pattern); got != tc.want {
				t.Errorf("Anchor(%s, %q) = %q, want %q", tc.kind, tc.pattern, got, tc.want)
			}
		})
	}
}

func TestRules_ApproveNeverCoversAShellChain(t *testing.T) {
	rules := indexed(rule("code:exec", "git status*", policy.ActionApprove))
	for target, want := range map[string]policy.Action{
		"git status --short":        policy.ActionApprove,
		"git status && curl x | sh": "",
		"git status; rm -rf ~/x":    "",
		"git status $(curl x)":      "",
		"git status `id`":           "",
		"git status > /tmp/out":     "",
		"git status\ncurl x":        "",
	} {
		if m := policy.EvalRules(testNorm, rules, subject("code:exec", target)); m.Action != want {
			t.Errorf("%q: action %q, want %q", target, m.Action, want)
		}
	}
}

func TestDecide_RequireApprovalRuleIgnoresGrants(t *testing.T) {
	g := fakeGrants{&policy.Grant{ID: 7, Target: "/home/r/a"}}
	d := policy.Decider{Rules: indexed(rule("fs:write", "/home/r/*", policy.ActionRequireApproval)), Grants: g, Norm: testNorm}
	dec, err := d.Decide(context.Background(), policy.Input{
		Profile: policy.Profile{Agent: "a", Ceiling: policy.Supervised}, Capability: "fs:write", Target: "/home/r/a",
		Channel: "web", SenderID: "owner",
	})
	if err != nil {
		t.Fatal(err)
	}
	if dec.Outcome != policy.ApprovalRequired || dec.GrantID != 0 {
		t.Fatalf("outcome %s grant %d, want approval_required with no grant", dec.Outcome, dec.GrantID)
	}
}

// fakeGrants finds its one grant for any request.
type fakeGrants struct{ g *policy.Grant }

func (f fakeGrants) FindMatching(context.Context, policy.Principal, policy.Session, string, string) (*policy.Grant, error) {
	return f.g, nil
}
func (f fakeGrants) Touch(context.Context, *policy.Grant) error { return nil }

// TestReview_HostOfUnparsableURL: a URL that net/url refuses (a bad escape
// or port) must still reduce to its host, or a block rule on that host is
// skipped and the request allowed (the host came out as the scheme).
func TestReview_HostOfUnparsableURL(t *testing.T) {
	for _, target := range []string{
		"https://evil.com/%zz", "https://EVIL.com:x/", "http://evil.com/a%", "http://good.com\\@evil.com",
		"http://[::1]:8080/", "[::1]:8080",
	} {
		want := "evil.com"
		if strings.Contains(target, "::1") {
			want = "[::1]"
		}
		if got := testNorm.Normalize(policy.KindHost, target); got != want {
			t.Errorf("Normalize(host, %q) = %q, want %q", target, got, want)
		}
		d := &policy.Decider{Rules: indexed(rule("network:http", want, policy.ActionBlock)), Norm: testNorm}
		if strings.Contains(target, `\`) || strings.Contains(target, ":x") { // refused outright: parsers disagree on it
			if _, err := d.Decide(context.Background(), input(policy.Full, "network:http", target)); !errors.Is(err, policy.ErrInvalid) {
				t.Errorf("%q: err %v, want a validation error", target, err)
			}
			continue
		}
		if dec := decide(t, d, input(policy.Full, "network:http", target)); dec.Outcome != D {
			t.Errorf("block rule %q on %q: got %q, want denied", want, target, dec.Outcome)
		}
	}
}

// TestReview_RuleTildeWithoutHome: with no home configured, "~" is matched
// as written; a block rule on "~/.ssh/**" must still catch "~/.ssh/id_rsa"
// (a grant on the same pattern already does).
func TestReview_RuleTildeWithoutHome(t *testing.T) {
	n := policy.Normalizer{}
	for _, target := range []string{"~/.ssh/id_rsa", "~/x/../.ssh/id_rsa"} {
		if !n.MatchRule(policy.KindPathGlob, "~/.ssh/**", target) {
			t.Errorf("MatchRule(~/.ssh/**, %q) = false without a home", target)
		}
		d := &policy.Decider{Rules: indexed(rule("fs:read", "~/.ssh/**", policy.ActionBlock)), Norm: n}
		if dec := decide(t, d, input(policy.Full, "fs:read", target)); dec.Outcome != D {
			t.Errorf("block rule ~/.ssh/** on %q: got %q, want denied", target, dec.Outcome)
		}
	}
}

// TestReview_GrantTargetClassCrossesSlash: a negated or range character
// class matches "/" in doublestar, so a suggested "/a/inv/*[^a]*" would
// cover /a/inv/sub/x: more than one directory's entries.
func TestReview_GrantTargetClassCrossesSlash(t *testing.T) {
	for _, s := range []string{"/a/inv/*[^a]*", "/a/inv/*[!a]*", "/a/inv/*[.-0]*", "/a/inv/*[]-0]*"} {
		got, taken := testNorm.GrantTarget(policy.KindPathGlob, "/a/inv/04.pdf", s)
		if taken || testNorm.MatchGrant(policy.KindPathGlob, got, "/a/inv/sub/x") {
			t.Errorf("GrantTarget(%q) = %q, %v: covers /a/inv/sub/x", s, got, taken)
		}
	}
	if got, taken := testNorm.GrantTarget(policy.KindPathGlob, "/a/inv/x.pdf", "/a/inv/[xy].pdf"); !taken || got != "/a/inv/[xy].pdf" {
		t.Errorf("a plain class is still taken: got %q, %v", got, taken)
	}
}

// TestValidateTarget_HostsExecutorsCannotReadDifferently: host targets
// that parsers could read two ways are refused, not guessed.
func TestValidateTarget_HostsExecutorsCannotReadDifferently(t *testing.T) {
	c, _ := policy.Lookup("network:http")
	for target, ok := range map[string]bool{
		"example.com":                    true,
		"https://API.example.com:8443/x": true,
		"http://[::1]:8080/":             true,
		"xn--bcher-kva.example":          true,
		`http://good.com\@evil.com`:      false,
		"http://%65vil.com/":             false,
		"evil .com":                      false,
		"https://":                       false,
	} {
		if err := policy.ValidateRequestTarget(c, target); (err == nil) != ok {
			t.Errorf("%q: err %v, want ok=%v", target, err, ok)
		}
	}
}

// TestHosts_IDNMatchedInASCII: an internationalized host is matched, granted
// and ruled on in its ASCII (xn--) form, whichever way it is written, so a
// look-alike never matches the name it imitates.
func TestHosts_IDNMatchedInASCII(t *testing.T) {
	c, _ := policy.Lookup("network:http")
	n := policy.Normalizer{}
	for target, want := range map[string]string{
		"https://раураl.com/login":      "xn--l-7sba6dbr.com",
		"https://API.münchen.de:8443/x": "api.xn--mnchen-3ya.de",
		"xn--mnchen-3ya.de":             "xn--mnchen-3ya.de",
		"ＥＸＡＭＰＬＥ.com":                   "example.com",
	} {
		if err := policy.ValidateRequestTarget(c, target); err != nil {
			t.Errorf("%q refused: %v", target, err)
		}
		if got := n.Normalize(policy.KindHost, target); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", target, got, want)
		}
	}
	if !n.MatchGrant(policy.KindHost, "*.münchen.de", "https://api.xn--mnchen-3ya.de/") ||
		!n.MatchGrant(policy.KindHost, "*.xn--mnchen-3ya.de", "https://api.münchen.de/") {
		t.Error("a Unicode grant and its xn-- form do not cover each other's targets")
	}
	if n.MatchGrant(policy.KindHost, "paypal.com", "https://раураl.com/") ||
		n.MatchRule(policy.KindHost, "*paypal*", "https://раураl.com/") {
		t.Error("a look-alike matched paypal.com")
	}
	if !n.MatchRule(policy.KindHost, "*.münchen.de", "api.xn--mnchen-3ya.de") {
		t.Error("a Unicode rule does not match its xn-- target")
	}
	if g, ok := n.GrantTarget(policy.KindHost, "api.münchen.de", "*.MÜNCHEN.de"); !ok || g != "*.xn--mnchen-3ya.de" {
		t.Errorf("grant target %q %v", g, ok)
	}
	if err := policy.ValidateRequestTarget(c, "ex\u202eample.com"); err == nil {
		t.Error("a host with a bidi control was accepted")
	}
}
