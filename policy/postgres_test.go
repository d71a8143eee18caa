package policy_test

import (
	"testing"

	"github.com/metnos/gateway/storage/storagetest"
)

// TestPostgres runs this package's store tests (every test that opens a
// database with newStore) again on PostgreSQL.
func TestPostgres(t *testing.T) {
	storagetest.RunOnPostgres(t,
		"^(TestGrants_|TestGrantCache_|TestDecide_|TestRules_|TestTokens_|TestProperty_NothingTurnsDeniedIntoAllowed_SQLite$)")
}
