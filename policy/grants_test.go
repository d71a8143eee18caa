package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

func TestGrants_RoundTrip(t *testing.T) {
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	ctx := context.Background()
	cases := []struct {
		name       string
		capability string
		target     string
		ttl        time.Duration
		wantTarget string
		covers     string // a target the stored grant must match
	}{
		{"path glob", "fs:read", "/home/r/inv/*", 24 * time.Hour, "/home/r/inv/*", "/home/r/inv/04.pdf"},
		{"path cleaned and expanded", "fs:write", "~/docs/./a/../b.txt", 0, "/home/r/docs/b.txt", "/home/r/docs/b.txt"},
		{"relative path cleaning to ~ is not home", "fs:write", "x/../~/.bashrc", 0, "./~/.bashrc", "x/../~/.bashrc"},
		{"host from url", "network:http", "https://API.Example.com:8443/x", time.Hour, "api.example.com", "api.example.com"},
		{"host wildcard lower-cased", "network:http", "*.Example.com", time.Hour, "*.example.com", "a.b.example.com"},
		{"none is capability-wide", "llm:online", "", time.Hour, "*", ""},
		{"none ignores a target", "llm:online", "gpt", time.Hour, "*", "anything"},
		{"exact kept as is", "mail:read", "INBOX/Invoices", time.Hour, "INBOX/Invoices", "INBOX/Invoices"},
		{"calendar", "calendar:read", "work", time.Hour, "work", "work"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := policy.Principal{Channel: "telegram", SenderID: "rt-" + tc.name}
			g := record(t, s, policy.NewGrant{Principal: p, Capability: tc.capability, Target: tc.target,
				GrantedBy: "anna", TTL: tc.ttl, RequestID: "req-1"})
			if g.ID == 0 || g.Target != tc.wantTarget || !g.Active || g.GrantedBy != "anna" || g.Capability != tc.capability {
				t.Fatalf("Record returned %+v, want target %q", g, tc.wantTarget)
			}
			if !g.GrantedAt.Equal(clk.Now()) {
				t.Errorf("granted_at %v, want %v", g.GrantedAt, clk.Now())
			}
			if tc.ttl == 0 && g.ExpiresAt != nil {
				t.Errorf("ttl 0: expires_at %v, want nil", g.ExpiresAt)
			}
			if tc.ttl > 0 && (g.ExpiresAt == nil || !g.ExpiresAt.Equal(clk.Now().Add(tc.ttl))) {
				t.Errorf("expires_at %v, want now+%s", g.ExpiresAt, tc.ttl)
			}
			got, err := s.Get(ctx, g.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !sameGrant(got, g) {
				t.Errorf("Get = %+v\nwant  %+v", got, g)
			}
			if got.RequestID != "req-1" || got.LastUsedAt != nil || got.RevokedAt != nil || got.RevokeReason != nil {
				t.Errorf("Get = %+v: want request req-1, never used, not revoked", got)
			}
			found, err := s.FindMatching(ctx, p, policy.Session{}, tc.capability, tc.covers)
			if err != nil {
				t.Fatal(err)
			}
			if found == nil || found.ID != g.ID {
				t.Fatalf("FindMatching(%q) = %+v, want grant %d", tc.covers, found, g.ID)
			}
			list, err := s.List(ctx, policy.GrantFilter{Channel: p.Channel, SenderID: p.SenderID})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || !sameGrant(list[0], g) {
				t.Errorf("List = %+v, want just %+v", list, g)
			}
		})
	}
	t.Run("Get unknown id", func(t *testing.T) {
		if _, err := s.Get(ctx, 999999); !errors.Is(err, policy.ErrNotFound) {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
	})
}

// TestGrants_RelativeTildeNotWidened: a relative target that cleans to a
// leading "~" names ./~/…; the stored grant must not come to mean the home
// directory when it is cleaned again at match time.
func TestGrants_RelativeTildeNotWidened(t *testing.T) {
	s, _ := newStore(t, newClock().Now)
	ctx := context.Background()
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: "x/../~/.bashrc"})
	cases := []struct {
		target string
		want   bool
	}{
		{"x/../~/.bashrc", true},
		{"./~/.bashrc", true},
		{"/home/r/.bashrc", false},
		{"~/.bashrc", false},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			found, err := s.FindMatching(ctx, roberto, policy.Session{}, "fs:write", tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if (found != nil) != tc.want {
				t.Errorf("grant %q covers %q: %v, want %v", g.Target, tc.target, found != nil, tc.want)
			}
		})
	}
}

func sameGrant(a, b policy.Grant) bool {
	eqT := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	eqS := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.ID == b.ID && a.Channel == b.Channel && a.SenderID == b.SenderID && a.Capability == b.Capability &&
		a.Target == b.Target && a.GrantedAt.Equal(b.GrantedAt) && eqT(a.ExpiresAt, b.ExpiresAt) &&
		a.GrantedBy == b.GrantedBy && eqT(a.LastUsedAt, b.LastUsedAt) && eqT(a.RevokedAt, b.RevokedAt) &&
		eqS(a.RevokeReason, b.RevokeReason) && a.Active == b.Active
}

func TestGrants_RecordValidation(t *testing.T) {
	s, db := newStore(t, newClock().Now)
	ok := policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/x", GrantedBy: "r"}
	cases := []struct {
		name   string
		mutate func(g *policy.NewGrant)
		is     error
	}{
		{"no channel", func(g *policy.NewGrant) { g.Channel = "" }, nil},
		{"no sender", func(g *policy.NewGrant) { g.SenderID = "" }, nil},
		{"no granted_by", func(g *policy.NewGrant) { g.GrantedBy = "" }, nil},
		{"empty path target", func(g *policy.NewGrant) { g.Target = "" }, policy.ErrBadTarget},
		{"NUL target", func(g *policy.NewGrant) { g.Target = "/a\x00" }, policy.ErrBadTarget},
		{"long target", func(g *policy.NewGrant) { g.Target = "/" + strings.Repeat("x", policy.MaxTargetBytes) }, policy.ErrBadTarget},
		{"negative ttl", func(g *policy.NewGrant) { g.TTL = -time.Second }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := ok
			tc.mutate(&g)
			_, err := s.Record(context.Background(), g)
			if err == nil {
				t.Fatal("Record succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
		})
	}
	assertNoRows(t, s, db)
}

// assertNoRows checks that refused writes left neither a grant nor an audit row.
func assertNoRows(t *testing.T, s *policy.GrantStore, db *storage.DB) {
	t.Helper()
	all, err := s.List(context.Background(), policy.GrantFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("refused grants were stored: %+v", all)
	}
	audit, err := storage.ListAudit(context.Background(), db, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 0 {
		t.Errorf("refused grants were audited: %+v", audit)
	}
}

func TestGrants_UnknownCapabilityRefused(t *testing.T) {
	s, db := newStore(t, newClock().Now)
	for _, c := range []string{"fs:wirte", "", "fs:*", "*"} {
		t.Run(c, func(t *testing.T) {
			_, err := s.Record(context.Background(), policy.NewGrant{Principal: roberto, Capability: c, Target: "/x", GrantedBy: "r"})
			if !errors.Is(err, policy.ErrUnknownCapability) {
				t.Errorf("Record err = %v, want ErrUnknownCapability", err)
			}
			if _, err := s.FindMatching(context.Background(), roberto, policy.Session{}, c, "/x"); !errors.Is(err, policy.ErrUnknownCapability) {
				t.Errorf("FindMatching err = %v, want ErrUnknownCapability", err)
			}
		})
	}
	assertNoRows(t, s, db)
}

func TestGrants_AlwaysCapabilityRefused(t *testing.T) {
	s, db := newStore(t, newClock().Now)
	for _, tc := range []struct{ cap, target string }{{"code:exec", "git status"}, {"mail:send", "boss@example.com"}} {
		t.Run(tc.cap, func(t *testing.T) {
			_, err := s.Record(context.Background(), policy.NewGrant{Principal: roberto, Capability: tc.cap, Target: tc.target, GrantedBy: "r"})
			if !errors.Is(err, policy.ErrGrantNotAllowed) {
				t.Fatalf("err = %v, want ErrGrantNotAllowed", err)
			}
			if !strings.Contains(err.Error(), "rules") || !strings.Contains(err.Error(), tc.cap) {
				t.Errorf("message %q should name the capability and point to the rules", err.Error())
			}
		})
	}
	assertNoRows(t, s, db)
}

func TestGrants_RevokeDeactivates(t *testing.T) {
	clk := newClock()
	s, db := newStore(t, clk.Now)
	ctx := context.Background()
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/home/r/inv/*"})
	other := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/home/r/other/*"})
	clk.Add(time.Minute)

	changed, err := s.Revoke(ctx, g.ID, "", "anna")
	if err != nil || !changed {
		t.Fatalf("first Revoke = %v, %v; want true", changed, err)
	}
	changed, err = s.Revoke(ctx, g.ID, "again", "anna")
	if err != nil || changed {
		t.Fatalf("second Revoke = %v, %v; want false, nil", changed, err)
	}
	changed, err = s.Revoke(ctx, 424242, "", "anna")
	if err != nil || changed {
		t.Fatalf("Revoke unknown = %v, %v; want false, nil", changed, err)
	}

	found, err := s.FindMatching(ctx, roberto, policy.Session{}, "fs:read", "/home/r/inv/04.pdf")
	if err != nil || found != nil {
		t.Fatalf("FindMatching after revoke = %+v, %v; want nil", found, err)
	}
	if found, _ := s.FindMatching(ctx, roberto, policy.Session{}, "fs:read", "/home/r/other/a"); found == nil || found.ID != other.ID {
		t.Errorf("revoking one grant affected another: %+v", found)
	}
	got, err := s.Get(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Active || got.RevokedAt == nil || !got.RevokedAt.Equal(clk.Now()) ||
		got.RevokeReason == nil || *got.RevokeReason != "revoked" {
		t.Errorf("after revoke: %+v", got)
	}
	d := &policy.Decider{Grants: s, Norm: testNorm}
	if dec := decide(t, d, input(policy.Supervised, "fs:read", "/home/r/inv/04.pdf")); dec.Outcome != AR {
		t.Errorf("decision after revoke %q, want approval_required", dec.Outcome)
	}

	t.Run("audit rows", func(t *testing.T) {
		rows, err := storage.ListAudit(ctx, db, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var written, revoked []storage.AuditEvent
		for _, e := range rows {
			switch e.Event {
			case storage.AuditGrantWritten:
				written = append(written, e)
			case storage.AuditGrantRevoked:
				revoked = append(revoked, e)
			}
		}
		if len(written) != 2 {
			t.Errorf("%d grant_written rows, want 2", len(written))
		}
		if len(revoked) != 1 {
			t.Fatalf("%d grant_revoked rows, want 1 (no-op revokes are not audited)", len(revoked))
		}
		r := revoked[0]
		if r.GrantID != g.ID || r.Actor != "anna" || r.Detail["reason"] != "revoked" || !r.At.Equal(clk.Now()) {
			t.Errorf("grant_revoked row %+v", r)
		}
	})
}

func TestGrants_AuditWritten(t *testing.T) {
	clk := newClock()
	s, db := newStore(t, clk.Now)
	ctx := context.Background()
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "network:http", Target: "API.example.com",
		GrantedBy: "roberto-phone", RequestID: "req-42"})
	rows, err := storage.ListAudit(ctx, db, "req-42", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d audit rows for the request, want 1", len(rows))
	}
	e := rows[0]
	want := map[string]any{"channel": "telegram", "sender_id": "roberto", "capability": "network:http", "target": "api.example.com"}
	if e.Event != storage.AuditGrantWritten || e.GrantID != g.ID || e.Actor != "roberto-phone" || !e.At.Equal(clk.Now()) {
		t.Errorf("row %+v", e)
	}
	for k, v := range want {
		if e.Detail[k] != v {
			t.Errorf("detail[%s] = %v, want %v", k, e.Detail[k], v)
		}
	}
	if _, err := s.Revoke(ctx, g.ID, "stale", "prune"); err != nil {
		t.Fatal(err)
	}
	rows, _ = storage.ListAudit(ctx, db, "", 1)
	if rows[0].Event != storage.AuditGrantRevoked || rows[0].Actor != "prune" || rows[0].Detail["reason"] != "stale" {
		t.Errorf("revoke row %+v", rows[0])
	}
}

func TestGrants_ExpiredInactive(t *testing.T) {
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	ctx := context.Background()
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/home/r/inv/*", TTL: time.Hour})
	forever := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/home/r/keep/*"})
	d := &policy.Decider{Grants: s, Norm: testNorm}
	steps := []struct {
		name    string
		advance time.Duration
		active  bool
	}{
		{"fresh", 0, true},
		{"just before expiry", 59*time.Minute + 59*time.Second, true},
		{"at expiry", time.Second, false},
		{"long after", 1000 * time.Hour, false},
	}
	for _, st := range steps {
		clk.Add(st.advance)
		t.Run(st.name, func(t *testing.T) {
			found, err := s.FindMatching(ctx, roberto, policy.Session{}, "fs:read", "/home/r/inv/04.pdf")
			if err != nil {
				t.Fatal(err)
			}
			if (found != nil) != st.active {
				t.Errorf("FindMatching found=%v, want %v", found != nil, st.active)
			}
			want := AR
			if st.active {
				want = A
			}
			if dec := decide(t, d, policy.Input{Profile: profile(policy.Supervised), Capability: "fs:read",
				Target: "/home/r/inv/04.pdf", Channel: "telegram", SenderID: "roberto", DryRun: true}); dec.Outcome != want {
				t.Errorf("decision %q, want %q", dec.Outcome, want)
			}
			got, _ := s.Get(ctx, g.ID)
			if got.Active != st.active {
				t.Errorf("Get Active=%v, want %v", got.Active, st.active)
			}
			active, _ := s.List(ctx, policy.GrantFilter{})
			all, _ := s.List(ctx, policy.GrantFilter{All: true})
			if wantN := map[bool]int{true: 2, false: 1}[st.active]; len(active) != wantN {
				t.Errorf("List active has %d, want %d", len(active), wantN)
			}
			if len(all) != 2 {
				t.Errorf("List all has %d, want 2", len(all))
			}
			if n, _ := s.CountActive(ctx); n != len(active) {
				t.Errorf("CountActive %d, want %d", n, len(active))
			}
			if f, _ := s.FindMatching(ctx, roberto, policy.Session{}, "fs:read", "/home/r/keep/x"); f == nil || f.ID != forever.ID {
				t.Error("a grant without expiry stopped matching")
			}
		})
	}
}

func TestGrants_LastUsedSet(t *testing.T) {
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	ctx := context.Background()
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: "/home/r/inv/*"})
	d := &policy.Decider{Grants: s, Norm: testNorm}
	in := input(policy.Supervised, "fs:write", "/home/r/inv/04.pdf")
	lastUsed := func() *time.Time {
		t.Helper()
		got, err := s.Get(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got.LastUsedAt
	}

	t.Run("DryRun does not touch", func(t *testing.T) {
		dry := in
		dry.DryRun = true
		dec := decide(t, d, dry)
		if dec.Outcome != A || dec.GrantID != g.ID {
			t.Fatalf("dry run: %q grant %d", dec.Outcome, dec.GrantID)
		}
		if lu := lastUsed(); lu != nil {
			t.Errorf("last_used_at = %v after a dry run, want nil", lu)
		}
	})
	clk.Add(time.Hour)
	first := clk.Now()
	t.Run("Decide sets last_used_at", func(t *testing.T) {
		decide(t, d, in)
		if lu := lastUsed(); lu == nil || !lu.Equal(first) {
			t.Errorf("last_used_at = %v, want %v", lu, first)
		}
	})
	t.Run("a decision within the minute does not rewrite it", func(t *testing.T) {
		clk.Add(30 * time.Second)
		decide(t, d, in)
		if lu := lastUsed(); lu == nil || !lu.Equal(first) {
			t.Errorf("last_used_at = %v, want still %v", lu, first)
		}
	})
	t.Run("a later decision moves it", func(t *testing.T) {
		clk.Add(2 * time.Minute)
		decide(t, d, in)
		if lu := lastUsed(); lu == nil || !lu.Equal(clk.Now()) {
			t.Errorf("last_used_at = %v, want %v", lu, clk.Now())
		}
	})
	t.Run("a decision that needs no grant does not touch", func(t *testing.T) {
		before := lastUsed()
		clk.Add(time.Hour)
		decide(t, d, input(policy.Full, "fs:write", "/home/r/inv/04.pdf")) // table allows at Full
		if lu := lastUsed(); !lu.Equal(*before) {
			t.Errorf("last_used_at moved to %v on a decision the table allowed", lu)
		}
	})
}

func TestGrants_ListFiltersAndHidesRevoked(t *testing.T) {
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	ctx := context.Background()
	mk := func(ch, sender, target string, ttl time.Duration) int64 {
		clk.Add(time.Second)
		return record(t, s, policy.NewGrant{Principal: policy.Principal{Channel: ch, SenderID: sender},
			Capability: "fs:read", Target: target, TTL: ttl}).ID
	}
	g1 := mk("telegram", "roberto", "/a/1", 0)
	g2 := mk("slack", "U1", "/a/2", 0)
	g3 := mk("telegram", "anna", "/a/3", 0)
	g4 := mk("telegram", "roberto", "/a/4", 0)
	g5 := mk("telegram", "roberto", "/a/5", time.Minute) // expires
	g6 := mk("slack", "roberto", "/a/6", 0)
	if ok, err := s.Revoke(ctx, g4, "", "roberto"); !ok || err != nil {
		t.Fatal("revoke", err)
	}
	clk.Add(time.Hour)

	cases := []struct {
		name string
		f    policy.GrantFilter
		want []int64
	}{
		{"active, newest first", policy.GrantFilter{}, []int64{g6, g3, g2, g1}},
		{"all", policy.GrantFilter{All: true}, []int64{g6, g5, g4, g3, g2, g1}},
		{"channel", policy.GrantFilter{Channel: "telegram"}, []int64{g3, g1}},
		{"sender", policy.GrantFilter{SenderID: "roberto"}, []int64{g6, g1}},
		{"channel and sender", policy.GrantFilter{Channel: "telegram", SenderID: "roberto"}, []int64{g1}},
		{"channel and sender, all", policy.GrantFilter{Channel: "telegram", SenderID: "roberto", All: true}, []int64{g5, g4, g1}},
		{"limit", policy.GrantFilter{All: true, Limit: 2}, []int64{g6, g5}},
		{"no match", policy.GrantFilter{Channel: "web"}, []int64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			ids := []int64{}
			for _, g := range got {
				ids = append(ids, g.ID)
				wantActive := g.ID != g4 && g.ID != g5
				if g.Active != wantActive {
					t.Errorf("grant %d Active=%v, want %v", g.ID, g.Active, wantActive)
				}
			}
			if len(ids) != len(tc.want) {
				t.Fatalf("ids %v, want %v", ids, tc.want)
			}
			for i := range ids {
				if ids[i] != tc.want[i] {
					t.Fatalf("ids %v, want %v", ids, tc.want)
				}
			}
		})
	}
	if got, _ := s.List(ctx, policy.GrantFilter{}); got == nil {
		t.Error("List returns nil instead of an empty slice") // JSON must say [] not null
	}
}

// TestGrants_AnchorIndexFindsEveryPatternKind checks that FindMatching, which
// looks only at the anchors of the target, finds grants stored under every
// kind of anchor: a grant the index misses would silently never apply.
func TestGrants_AnchorIndexFindsEveryPatternKind(t *testing.T) {
	s, _ := newStore(t, newClock().Now)
	ctx := context.Background()
	cases := []struct {
		name, capability, pattern, target string
	}{
		{"literal path", "fs:read", "/a/inv/04.pdf", "/a/inv/04.pdf"},
		{"one-dir glob", "fs:read", "/a/inv/*", "/a/inv/04.pdf"},
		{"doublestar deep", "fs:read", "/b/**", "/b/c/d/e/f.txt"},
		{"doublestar own dir", "fs:read", "/c/**", "/c"},
		{"glob mid path", "fs:read", "/d/*/x.txt", "/d/sub/x.txt"},
		{"root glob", "fs:read", "/*", "/e"},
		{"class", "fs:read", "/f/[0-9].txt", "/f/7.txt"},
		{"braces", "fs:read", "/g/{x,y}/z", "/g/y/z"},
		{"escaped slash", "fs:read", `/h\/i/*`, "/h/i/j"},
		{"relative glob", "fs:read", "*.md", "notes.md"},
		{"tilde glob", "fs:write", "~/w/*", "/home/r/w/a"},
		{"host literal", "network:http", "api.example.com", "https://API.example.com/x"},
		{"host wildcard", "network:http", "*.example.org", "a.b.example.org"},
		{"exact", "mail:read", "INBOX", "INBOX"},
		{"exact with glob characters", "channel:out", "#general*", "#general*"},
		{"none", "llm:online", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := policy.Lookup(tc.capability)
			p := policy.Principal{Channel: "web", SenderID: tc.name}
			g := record(t, s, policy.NewGrant{Principal: p, Capability: tc.capability, Target: tc.pattern})
			if !testNorm.MatchGrant(c.TargetKind, g.Target, tc.target) {
				t.Fatalf("test case wrong: %q does not match %q", g.Target, tc.target)
			}
			found, err := s.FindMatching(ctx, p, policy.Session{}, tc.capability, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if found == nil || found.ID != g.ID {
				t.Errorf("FindMatching(%q) = %+v; the grant %q (anchor %q) was missed", tc.target, found, g.Target,
					testNorm.Anchor(c.TargetKind, g.Target))
			}
		})
	}
}
