package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func rootCaller(agent string) policy.Caller {
	return policy.Caller{Agent: agent, Profile: policy.RootProfile(policy.Supervised, nil, nil)}
}

func childCaller(t *testing.T, s *policy.TokenStore, tok string) policy.Caller {
	t.Helper()
	tk, err := s.Authenticate(context.Background(), tok)
	if err != nil || tk == nil {
		t.Fatalf("Authenticate: %v %v", tk, err)
	}
	return policy.Caller{Agent: tk.Agent, Profile: tk.Profile, Token: tk}
}

func TestTokens_CreateAuthenticateRevokeDescendants(t *testing.T) {
	db := storagetest.Open(t)
	other := storagetest.Reopen(t, db) // another replica, or the CLI
	clk := newClock()
	s := policy.NewTokenStore(db, testNorm, clk.Now)
	s2 := policy.NewTokenStore(other, testNorm, clk.Now)
	ctx := context.Background()

	a, err := s.Create(ctx, rootCaller("metnos"), policy.TokenRequest{TTL: 2 * time.Hour, Name: "refactor-bot",
		AllowCapabilities: []string{"fs:read", "fs:write"}}, "agent:metnos")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.Token, policy.ChildTokenPrefix) || len(a.Token) < 40 || !a.ExpiresAt.Equal(clk.Now().Add(2*time.Hour)) {
		t.Fatalf("new token %+v", a)
	}
	// Stored hashed: the plain token is nowhere in the database.
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM agent_tokens WHERE hash = $1 OR id = $1 OR profile LIKE $2`,
		a.Token, "%"+a.Token+"%").Scan(&n); err != nil || n != 0 {
		t.Fatalf("plain token stored: %d %v", n, err)
	}
	b, err := s.Create(ctx, childCaller(t, s, a.Token), policy.TokenRequest{TTL: 5 * time.Hour, Name: "sub",
		AllowCapabilities: []string{"fs:read", "mail:send"}}, "agent:metnos/"+a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !b.ExpiresAt.Equal(a.ExpiresAt) || len(b.Narrowed) != 2 {
		t.Errorf("grandchild: expires %s (parent %s), narrowed %+v", b.ExpiresAt, a.ExpiresAt, b.Narrowed)
	}
	c, err := s.Create(ctx, childCaller(t, s, b.Token), policy.TokenRequest{TTL: time.Hour}, "x")
	if err != nil {
		t.Fatal(err)
	}
	sibling, err := s.Create(ctx, rootCaller("metnos"), policy.TokenRequest{TTL: time.Hour}, "agent:metnos")
	if err != nil {
		t.Fatal(err)
	}
	// Listing: the caller's own children only.
	kids, err := s.Children(ctx, rootCaller("metnos"))
	if err != nil || len(kids) != 2 {
		t.Fatalf("root's children: %d %v", len(kids), err)
	}
	kids, _ = s.Children(ctx, childCaller(t, s, a.Token))
	if len(kids) != 1 || kids[0].ID != b.ID || kids[0].ParentID == nil || *kids[0].ParentID != a.ID || kids[0].Name != "sub" {
		t.Fatalf("a's children: %+v", kids)
	}
	// Someone else's token cannot be revoked, nor a parent by its child.
	if _, err := s.Revoke(ctx, rootCaller("other"), false, a.ID, "x"); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("revoke by another agent: %v", err)
	}
	if _, err := s.Revoke(ctx, childCaller(t, s, b.Token), false, a.ID, "x"); !errors.Is(err, policy.ErrNotFound) {
		t.Errorf("revoke of a parent by its child: %v", err)
	}
	// Revoking a (through the other handle) kills b and c at once, not the sibling.
	got, err := s2.Revoke(ctx, rootCaller("metnos"), false, a.ID, "agent:metnos")
	if err != nil || got != 3 {
		t.Fatalf("revoke a: %d %v", got, err)
	}
	for _, tok := range []string{a.Token, b.Token, c.Token} {
		if tk, err := s.Authenticate(ctx, tok); tk != nil || err != nil {
			t.Errorf("token still authenticates after the revoke: %v %v", tk, err)
		}
	}
	if tk, _ := s.Authenticate(ctx, sibling.Token); tk == nil {
		t.Error("the sibling was revoked too")
	}
	rows, _ := storage.ListAudit(ctx, db, "", 10)
	var created, revoked int
	for _, r := range rows {
		switch r.Event {
		case storage.AuditTokenCreated:
			created++
			if strings.Contains(r.Actor+string(must(jsonOf(r.Detail))), policy.ChildTokenPrefix) {
				t.Errorf("audit row carries a token: %+v", r)
			}
		case storage.AuditTokenRevoked:
			revoked++
		}
	}
	if created != 4 || revoked != 1 {
		t.Errorf("audit: %d created, %d revoked", created, revoked)
	}
	// Expiry.
	clk.Add(2 * time.Hour)
	if tk, _ := s.Authenticate(ctx, sibling.Token); tk != nil {
		t.Error("an expired token authenticates")
	}
	if tk, _ := s.Authenticate(ctx, "gwc_nonsense"); tk != nil {
		t.Error("a made-up token authenticates")
	}
}

// TestTokens_RevokedParentMakesNoChild: a child made by a token revoked
// meanwhile (its Caller read before the revoke) is refused; and a child
// whose ancestor is revoked never authenticates, even if it was written.
func TestTokens_RevokedParentMakesNoChild(t *testing.T) {
	db := storagetest.Open(t)
	s := policy.NewTokenStore(db, testNorm, newClock().Now)
	ctx := context.Background()
	a, _ := s.Create(ctx, rootCaller("metnos"), policy.TokenRequest{TTL: time.Hour}, "x")
	ca := childCaller(t, s, a.Token)
	b, err := s.Create(ctx, ca, policy.TokenRequest{TTL: time.Hour}, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke(ctx, rootCaller("metnos"), false, a.ID, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, ca, policy.TokenRequest{TTL: time.Hour}, "x"); !errors.Is(err, policy.ErrTokenRevoked) {
		t.Errorf("child of a revoked token: %v", err)
	}
	// Resurrect b's row alone, as a racing insert would leave it: its revoked parent still refuses it.
	if _, err := db.ExecContext(ctx, `UPDATE agent_tokens SET revoked_at = NULL WHERE id = $1`, b.ID); err != nil {
		t.Fatal(err)
	}
	if tk, _ := s.Authenticate(ctx, b.Token); tk != nil {
		t.Error("a child of a revoked token authenticates")
	}
}

func TestTokens_MaxRequestsCountsUpTheChain(t *testing.T) {
	db := storagetest.Open(t)
	s := policy.NewTokenStore(db, testNorm, newClock().Now)
	ctx := context.Background()
	a, _ := s.Create(ctx, rootCaller("metnos"), policy.TokenRequest{TTL: time.Hour, MaxRequests: num(3)}, "x")
	b, _ := s.Create(ctx, childCaller(t, s, a.Token), policy.TokenRequest{TTL: time.Hour, MaxRequests: num(10)}, "x")
	if *b.Profile.MaxRequests != 3 {
		t.Fatalf("child max_requests %d", *b.Profile.MaxRequests)
	}
	consume := func(tok string) error { return s.Consume(ctx, childCaller(t, s, tok).Token) }
	for i, tok := range []string{b.Token, a.Token, b.Token} {
		if err := consume(tok); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
	}
	// The parent's budget is spent by its child's uses too.
	if err := consume(a.Token); !errors.Is(err, policy.ErrTokenExhausted) {
		t.Errorf("4th use by the parent: %v", err)
	}
	if err := consume(b.Token); !errors.Is(err, policy.ErrTokenExhausted) {
		t.Errorf("4th use by the child: %v", err)
	}
	var used int
	if err := db.QueryRowContext(ctx, `SELECT used FROM agent_tokens WHERE id = $1`, b.ID).Scan(&used); err != nil || used != 2 {
		t.Errorf("child used = %d %v, want 2 (a refused use counts nowhere)", used, err)
	}
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
