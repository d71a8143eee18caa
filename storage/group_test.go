package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func openGroupT(t *testing.T) *storage.DB {
	t.Helper()
	db := storagetest.Open(t)
	if _, err := db.ExecContext(context.Background(), `CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func countItems(t *testing.T, db *storage.DB, where string) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM items `+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGroupTx_Concurrent: many concurrent calls, some failing after a
// first write and an audit row: every call that returned nil is stored
// whole, every call that failed left nothing, whatever group it shared,
// and the audit chain holds exactly the rows of the calls that succeeded.
func TestGroupTx_Concurrent(t *testing.T) {
	db := openGroupT(t)
	ctx := context.Background()
	const n = 400
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.GroupTx(ctx, func(tx storage.Querier) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ($1, 1)`, fmt.Sprint("a", i)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ($1, 2)`, fmt.Sprint("b", i)); err != nil {
					return err
				}
				if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "test", Event: storage.AuditNote,
					RequestID: fmt.Sprint("r", i)}); err != nil {
					return err
				}
				if i%7 == 0 {
					return fmt.Errorf("call %d fails after writing", i)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		a := countItems(t, db, fmt.Sprintf("WHERE k IN ('a%d', 'b%d')", i, i))
		switch {
		case i%7 == 0 && (err == nil || a != 0):
			t.Errorf("call %d: err %v, %d rows kept; want its error and none", i, err, a)
		case i%7 != 0 && (err != nil || a != 2):
			t.Errorf("call %d: err %v, %d rows; want nil and 2", i, err, a)
		}
	}
	ok := n - (n+6)/7
	var audited int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE actor = 'test'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != ok {
		t.Errorf("%d audit rows, want %d (one per call that succeeded)", audited, ok)
	}
	wantIntact(t, db, ok+1) // and the genesis row
}

// TestGroupTx_ConstraintFailure: a call failing on a constraint (a
// duplicate key) rolls back alone, also when it is the only call.
func TestGroupTx_ConstraintFailure(t *testing.T) {
	db := openGroupT(t)
	ctx := context.Background()
	insert := func(k string) func(tx storage.Querier) error {
		return func(tx storage.Querier) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ($1, 1)`, k)
			return err
		}
	}
	if err := db.GroupTx(ctx, insert("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.GroupTx(ctx, insert("x")); err == nil {
		t.Fatal("duplicate key accepted")
	}
	var wg sync.WaitGroup
	errs := make([]error, 50)
	for i := range errs {
		wg.Go(func() {
			k := fmt.Sprint("y", i)
			if i%2 == 0 {
				k = "x"
			}
			errs[i] = db.GroupTx(ctx, insert(k))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i%2 == 0) != (err != nil) {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := countItems(t, db, ""); got != 26 {
		t.Errorf("%d rows, want 26", got)
	}
}

// TestGroupTx_CancelledCall: a call whose context has ended is not run.
func TestGroupTx_CancelledCall(t *testing.T) {
	db := openGroupT(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := db.GroupTx(ctx, func(tx storage.Querier) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("cancelled call: err %v, ran %v", err, ran)
	}
}
