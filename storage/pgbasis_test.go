package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// pinned is a Basis pinned to the latest read of db's counters, as a
// decision on it takes it (through a version source's Current).
func pinned(t *testing.T, v *storage.GrantsVersion) *storage.Basis {
	t.Helper()
	b := new(storage.Basis)
	if _, err := v.Current(storage.ArrivedOn(context.Background(), time.Now(), b)); err != nil {
		t.Fatal(err)
	}
	if !b.Pinned() {
		t.Fatal("the basis was not pinned to the latest read")
	}
	return b
}

// TestGroupTx_PinnedBasisCheckedAtCommit: on PostgreSQL a call decided on
// the latest read of the change counters (a pinned Basis) is stored when
// they did not move, and fails with ErrStaleBasis, nothing of it stored
// (neither its row nor its audit row), when grants or rules changed on
// another handle after that read, including in groups shared with calls
// that need no check, which are stored. The chain stays whole.
func TestGroupTx_PinnedBasisCheckedAtCommit(t *testing.T) {
	if storagetest.Dialect() != storage.Postgres {
		t.Skip("on SQLite a decision never takes an earlier read; the PostgreSQL run covers this")
	}
	db := openGroupT(t)
	other := storagetest.Reopen(t, db)
	ctx := context.Background()
	before := verify(t, db).Rows
	v := storage.NewGrantsVersion(db)
	if _, err := v.Current(ctx); err != nil { // the barrier's first read
		t.Fatal(err)
	}
	if err := auditOnlyCallOn(ctx, db, pinned(t, v), "fresh"); err != nil {
		t.Fatalf("unchanged counters: %v", err)
	}
	for _, table := range []string{"grants_version", storage.RulesVersionTable} {
		b := pinned(t, v)
		if err := storage.BumpVersion(ctx, other, table); err != nil {
			t.Fatal(err)
		}
		k := "stale-" + table
		if err := auditOnlyCallOn(ctx, db, b, k); !errors.Is(err, storage.ErrStaleBasis) {
			t.Fatalf("after %s moved: %v, want ErrStaleBasis", table, err)
		}
		if n := countItems(t, db, fmt.Sprintf("WHERE k = '%s'", k)); n != 0 {
			t.Fatalf("a stale call's row was stored (%d)", n)
		}
		if n := auditRowsOf(t, db, k); n != 0 {
			t.Fatalf("a stale call's audit row was stored (%d)", n)
		}
		// The same call decided behind the barrier (no basis) is stored.
		if err := auditOnlyCallOn(ctx, db, nil, k); err != nil {
			t.Fatal(err)
		}
	}

	// Many at once: stale calls beside calls without a basis, in whatever
	// groups they fall into.
	stale := pinned(t, v)
	if err := storage.BumpVersion(ctx, other, "grants_version"); err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range 2 * n {
		wg.Go(func() {
			if i%2 == 0 {
				errs[i] = auditOnlyCallOn(ctx, db, stale, fmt.Sprintf("mix-stale-%d", i))
			} else {
				errs[i] = auditOnlyCallOn(ctx, db, nil, fmt.Sprintf("mix-ok-%d", i))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i%2 == 0 && !errors.Is(err, storage.ErrStaleBasis) || i%2 == 1 && err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if got := countItems(t, db, `WHERE k LIKE 'mix-stale-%'`); got != 0 {
		t.Fatalf("%d stale calls stored", got)
	}
	if got := countItems(t, db, `WHERE k LIKE 'mix-ok-%'`); got != n {
		t.Fatalf("%d of %d calls without a basis stored", got, n)
	}
	wantIntact(t, db, before+3+n) // fresh, the two stale calls run again, the mix's
}

// auditOnlyCallOn is auditOnlyCall decided on b.
func auditOnlyCallOn(ctx context.Context, db *storage.DB, b *storage.Basis, k string) error {
	return db.GroupExecAudit(ctx, b, `INSERT INTO items (k, v) VALUES ($1, 1) ON CONFLICT (k) DO NOTHING`, []any{k},
		func(n int64) (storage.AuditRecord, bool) {
			rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
			if err != nil {
				panic(err)
			}
			return rec, n == 1
		})
}

// auditRowsOf counts the audit rows of request id k.
func auditRowsOf(t *testing.T, db *storage.DB, k string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM audit WHERE request_id = $1`, k).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
