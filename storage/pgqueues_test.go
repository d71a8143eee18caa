package storage_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// auditOnlyCall is a decided-now-like call: an insert, then its audit row.
func auditOnlyCall(ctx context.Context, db *storage.DB, k string) error {
	return db.GroupExecAudit(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, 1) ON CONFLICT (k) DO NOTHING`, []any{k},
		func(n int64) (storage.AuditRecord, bool) {
			rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
			if err != nil {
				panic(err)
			}
			return rec, n == 1
		})
}

// TestGroupTx_AuditOnlyNotBehindOthers: on PostgreSQL a GroupExecAudit
// call commits while a GroupTx call's transaction is still open (their
// queues and writers are apart, see queueOf), and both are stored and
// chained.
func TestGroupTx_AuditOnlyNotBehindOthers(t *testing.T) {
	if storagetest.Dialect() != storage.Postgres {
		t.Skip("SQLite has one writer; the PostgreSQL run covers this")
	}
	db := openGroupT(t)
	ctx := context.Background()
	before := verify(t, db).Rows
	inside, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	txDone := make(chan error, 1)
	go func() {
		txDone <- db.GroupTx(ctx, func(q storage.Querier) error {
			if _, err := q.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ('slow', 2)`); err != nil {
				return err
			}
			once.Do(func() {
				close(inside)
				<-release // held open until the other call has committed
			})
			return storage.AppendAudit(ctx, q, storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: "slow"})
		})
	}()
	<-inside
	fast := make(chan error, 1)
	go func() { fast <- auditOnlyCall(ctx, db, "fast") }()
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-txDone:
		t.Fatalf("the GroupTx call returned (%v) while held open", err)
	case <-time.After(time.Minute): // a bound for a broken build, not a speed check
		close(release)
		t.Fatal("the GroupExecAudit call waited for the open GroupTx transaction")
	}
	close(release)
	if err := <-txDone; err != nil {
		t.Fatal(err)
	}
	if got := countItems(t, db, ""); got != 2 {
		t.Errorf("%d items, want 2", got)
	}
	wantIntact(t, db, before+2)
}

// BenchmarkGroupTx_AuditOnlyBesideOthersPostgres: 16 callers of
// decided-now-like calls (GroupExecAudit) beside 4 callers of
// pending-like GroupTx calls (an advisory lock, a count, three inserts and
// an audit row, as a pending request's cap, row and cards); it reports
// the decided-now calls' p50 and p90.
func BenchmarkGroupTx_AuditOnlyBesideOthersPostgres(b *testing.B) {
	db := storagetest.OpenDialect(b, storage.Postgres)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	pending := func(k string) error {
		return db.GroupTx(ctx, func(q storage.Querier) error {
			if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock(42)`); err != nil {
				return err
			}
			if _, err := q.ExecContext(ctx, `SELECT count(*) FROM items WHERE v = 2`); err != nil {
				return err
			}
			for i := range 3 {
				if _, err := q.ExecContext(ctx, `INSERT INTO items (k, v) VALUES ($1, 2)`, fmt.Sprint(k, "-", i)); err != nil {
					return err
				}
			}
			return storage.AppendAudit(ctx, q, storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
		})
	}
	var seq, left atomic.Int64
	left.Store(int64(b.N))
	lats := make([][]time.Duration, 16)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	b.ResetTimer()
	for c := range 16 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := auditOnlyCall(ctx, db, fmt.Sprint("k", seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		})
	}
	var others sync.WaitGroup
	for range 4 {
		others.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := pending(fmt.Sprint("p", seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(stop)
	others.Wait()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(all[len(all)/2])/1e6, "p50_ms")
		b.ReportMetric(float64(all[len(all)*9/10])/1e6, "p90_ms")
	}
}

// BenchmarkGroupTx_AuditOnly64Postgres: 64 callers of decided-now-like
// calls (GroupExecAudit) and nothing else: the capacity of the decided-now
// group writer alone, without HTTP or policy in front of it.
func BenchmarkGroupTx_AuditOnly64Postgres(b *testing.B) {
	db := storagetest.OpenDialect(b, storage.Postgres)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	var seq, left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	start := time.Now()
	b.ResetTimer()
	for range 64 {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := auditOnlyCall(ctx, db, fmt.Sprint("k", seq.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
