package approvals_test

import (
	"testing"

	"github.com/metnos/gateway/storage/storagetest"
)

// TestPostgres runs every test of this package again on PostgreSQL: they
// all open their database through newFixture.
func TestPostgres(t *testing.T) {
	storagetest.RunOnPostgres(t, ".")
}
