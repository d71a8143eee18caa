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

// TestGroupTx_ClosedLoopCallers: callers that each call again as soon as
// they are answered, as an agent's requests do (the writer waits for as
// many calls as its last group held, see gather): every call is stored
// with its audit row, and the chain holds exactly those rows.
func TestGroupTx_ClosedLoopCallers(t *testing.T) {
	db := openGroupT(t)
	ctx := context.Background()
	const callers, calls = 16, 40
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				k := fmt.Sprintf("c%d-%d", c, i)
				err := db.GroupExecAudit(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, 1)`, []any{k},
					func(got int64) (storage.AuditRecord, bool) {
						rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
						if err != nil {
							t.Error(err)
						}
						return rec, got == 1
					})
				if err != nil {
					t.Errorf("%s: %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := countItems(t, db, ""); got != callers*calls {
		t.Errorf("%d rows, want %d", got, callers*calls)
	}
	wantIntact(t, db, callers*calls+1) // and the genesis row
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

// TestGroupTx_ExecMixed: GroupExec and GroupExecAudit calls (their first
// statements sent together on PostgreSQL) and GroupTx calls in the same
// groups. A repeat
// affects no row and appends nothing; a first statement that fails (NOT
// NULL) and a then that fails each roll back alone; every other call is
// stored whole with its audit row, and the chain is intact.
func TestGroupTx_ExecMixed(t *testing.T) {
	db := openGroupT(t)
	ctx := context.Background()
	const n = 300
	errs := make([]error, n)
	affected := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k := fmt.Sprint("k", i)
			var v any = i
			switch i % 10 {
			case 1:
				k = "shared" // one of these is stored; the others are repeats
			case 8, 9:
				if i%10 == 8 {
					k = "shared"
				}
				errs[i] = db.GroupExecAudit(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING`, []any{k, v},
					func(got int64) (storage.AuditRecord, bool) {
						affected[i] = got
						rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
						if err != nil {
							t.Error(err)
						}
						return rec, got == 1
					})
				return
			case 3:
				v = nil // fails: v is NOT NULL
			case 5:
				errs[i] = db.GroupTx(ctx, func(tx storage.Querier) error {
					if _, err := tx.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ($1, $2)`, k, i); err != nil {
						return err
					}
					return storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
				})
				affected[i] = 1
				return
			}
			errs[i] = db.GroupExec(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING`, []any{k, v},
				func(tx storage.Querier, got int64) error {
					affected[i] = got
					if got == 0 {
						return nil
					}
					if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k}); err != nil {
						return err
					}
					if i%10 == 7 {
						return fmt.Errorf("call %d fails after its statement", i)
					}
					return nil
				})
		})
	}
	wg.Wait()
	stored, shared := 0, 0
	for i, err := range errs {
		switch i % 10 {
		case 3, 7:
			if err == nil {
				t.Errorf("call %d: no error", i)
			}
			if got := countItems(t, db, fmt.Sprintf("WHERE k = 'k%d'", i)); got != 0 {
				t.Errorf("call %d failed but left its row", i)
			}
		case 1, 8:
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			shared += int(affected[i])
		default:
			if err != nil || affected[i] != 1 {
				t.Errorf("call %d: err %v, %d rows", i, err, affected[i])
			}
			stored++
		}
	}
	if shared != 1 {
		t.Errorf("the shared key was inserted %d times, want once", shared)
	}
	if got := countItems(t, db, ""); got != stored+1 {
		t.Errorf("%d rows, want %d", got, stored+1)
	}
	var audited int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE actor = 'test'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != stored+1 {
		t.Errorf("%d audit rows, want %d (one per row stored)", audited, stored+1)
	}
	wantIntact(t, db, stored+2) // and the genesis row
}

// TestGroupTx_ExecAuditOnly: groups of GroupExecAudit calls alone (on
// PostgreSQL the head is locked in the batch of their inserts): repeats
// append nothing, a failing statement fails alone, and the chain holds
// exactly the rows of the calls stored.
func TestGroupTx_ExecAuditOnly(t *testing.T) {
	db := openGroupT(t)
	ctx := context.Background()
	const n = 200
	errs := make([]error, n)
	affected := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k := fmt.Sprint("k", i)
			var v any = i
			switch i % 4 {
			case 1:
				k = fmt.Sprint("k", i-1) // the call before's key: one of the two is stored
			case 2:
				if i%20 == 2 {
					v = nil // fails: v is NOT NULL
				}
			}
			errs[i] = db.GroupExecAudit(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, $2) ON CONFLICT (k) DO NOTHING`, []any{k, v},
				func(got int64) (storage.AuditRecord, bool) {
					affected[i] = got
					rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
					if err != nil {
						t.Error(err)
					}
					return rec, got == 1
				})
		})
	}
	wg.Wait()
	stored := 0
	for i, err := range errs {
		switch {
		case i%20 == 2:
			if err == nil {
				t.Errorf("call %d: no error", i)
			}
		case err != nil:
			t.Errorf("call %d: %v", i, err)
		default:
			stored += int(affected[i])
		}
	}
	for i := 0; i < n; i += 4 {
		if affected[i]+affected[i+1] != 1 {
			t.Errorf("key k%d inserted %d times, want once", i, affected[i]+affected[i+1])
		}
	}
	if got := countItems(t, db, ""); got != stored {
		t.Errorf("%d rows, want %d", got, stored)
	}
	var audited int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM audit WHERE actor = 'test'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != stored {
		t.Errorf("%d audit rows, want %d (one per row stored)", audited, stored)
	}
	wantIntact(t, db, stored+1) // and the genesis row
}
