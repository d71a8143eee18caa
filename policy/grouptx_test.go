package policy_test

import (
	"context"
	"errors"
	"testing"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// TestGroupTx_RevokeRefused: a group commit is trusted to leave grants and
// rules alone (its commits move the grant cache's snapshot without a
// read), so in test builds a GroupTx function that revokes a grant, or
// changes a rule, fails its group: nothing of it is kept and the grant is
// still in force. (The mutation test of that invariant: without the check
// the revoke commits, hidden from the cache.)
func TestGroupTx_RevokeRefused(t *testing.T) {
	ctx := context.Background()
	s, db := newStore(t, newClock().Now)
	g := record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:read", Target: "/srv/*"})
	err := db.GroupTx(ctx, func(q storage.Querier) error {
		_, err := s.RevokeTx(ctx, q, g.ID, "in a group", "test")
		return err
	})
	if !errors.Is(err, storage.ErrGroupChangedPolicy) {
		t.Fatalf("a GroupTx function that revokes a grant: %v, want ErrGroupChangedPolicy", err)
	}
	got, err := s.Get(ctx, g.ID)
	if err != nil || !got.Active {
		t.Fatalf("grant after the refused group: %+v, %v: want it still in force", got, err)
	}
	err = db.GroupTx(ctx, func(q storage.Querier) error {
		return storage.BumpVersion(ctx, q, storage.RulesVersionTable)
	})
	if !errors.Is(err, storage.ErrGroupChangedPolicy) {
		t.Fatalf("a GroupTx function that changes the rules: %v, want ErrGroupChangedPolicy", err)
	}
	// The same changes through InTx are fine.
	if err := db.InTx(ctx, func(q storage.Querier) error {
		_, err := s.RevokeTx(ctx, q, g.ID, "in its own transaction", "test")
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
