package storage_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// holdLease runs db's lease until the test ends.
func holdLease(t *testing.T, db *storage.DB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = db.HoldLease(ctx, nil) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitHeld waits until db holds a lease (want) or none.
func waitHeld(t *testing.T, db *storage.DB, want bool) {
	t.Helper()
	bound := time.NewTimer(time.Minute)
	defer bound.Stop()
	tick := time.NewTicker(50 * time.Millisecond) // a lease can also run out, which no channel tells
	defer tick.Stop()
	for {
		held, changed := db.LeaseHeld()
		if held == want {
			return
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-bound.C:
			t.Fatalf("the lease is still held=%v after a minute", held)
		}
	}
}

// bumpRules changes the rules' counter on db, as a rule change does, and
// returns its new value and InTx's error.
func bumpRules(t *testing.T, db *storage.DB) (int64, error) {
	t.Helper()
	ctx := context.Background()
	var n int64
	err := db.InTx(ctx, func(q storage.Querier) error {
		if err := storage.BumpVersion(ctx, q, storage.RulesVersionTable); err != nil {
			return err
		}
		return q.QueryRowContext(ctx, `SELECT n FROM `+storage.RulesVersionTable+` WHERE id = 1`).Scan(&n)
	})
	return n, err
}

func openLeaseDB(t *testing.T) *storage.DB {
	t.Helper()
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	return storagetest.OpenDialect(t, storage.Postgres)
}

// TestLease_WriterReturnsOnceInstalled: a change to the counters on B
// (which holds no lease, as the CLI) or on A returns only once replicas A
// and C, which hold leases, decide on its counters or hold no lease: 200
// times over. A and C held theirs in most
// rounds (logged), so the writers did wait for their acknowledgements.
func TestLease_WriterReturnsOnceInstalled(t *testing.T) {
	a := openLeaseDB(t)
	b, c := storagetest.Reopen(t, a), storagetest.Reopen(t, a)
	holdLease(t, a)
	holdLease(t, c)
	waitHeld(t, a, true)
	waitHeld(t, c, true)
	leased := 0
	for i := range 200 {
		n, err := bumpRules(t, []*storage.DB{b, a}[i%2])
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		for _, r := range []*storage.DB{a, c} {
			vals, ok := storage.LeaseCounters(r)
			if ok && vals[1] < n {
				t.Fatalf("round %d: the change to %d returned while a replica's lease vouches for %d", i, n, vals[1])
			}
			if ok {
				leased++
			}
		}
	}
	t.Logf("%d of 400 checks found the lease held", leased)
	if leased == 0 {
		t.Fatal("no replica held its lease: the test proved nothing")
	}
}

// TestLease_DeadReplicaWaitedOut: a replica killed with its lease running
// (its row stays, its acknowledgements never come) holds a writer until
// that lease has run out by the database's clock, and not forever: the
// change returns, with no error.
func TestLease_DeadReplicaWaitedOut(t *testing.T) {
	a := openLeaseDB(t)
	ctx := context.Background()
	// As a renewal 100 ms ago would have left it, acknowledging nothing.
	if _, err := a.ExecContext(ctx, `INSERT INTO replica_leases (id, expires_at, grants_acked, rules_acked)
		VALUES ('killed', now() + $1 * interval '1 millisecond', 0, 0)`, (storage.LeaseTerm - 100*time.Millisecond).Milliseconds()); err != nil {
		t.Fatal(err)
	}
	if _, err := bumpRules(t, a); err != nil {
		t.Fatal(err)
	}
	var over bool
	if err := a.QueryRowContext(ctx, `SELECT expires_at <= now() FROM replica_leases WHERE id = 'killed'`).Scan(&over); err != nil {
		t.Fatal(err)
	}
	if !over {
		t.Fatal("the change returned while the killed replica's lease still ran")
	}
}

// TestLease_UnconfirmedWhenCallerGoes: a writer whose context ends while
// a replica has not acknowledged its change says so (ErrUnconfirmed); the
// change is committed all the same. The context ends half the lease's
// term after the call began: if the transaction itself took that long,
// the round says nothing and is tried again.
func TestLease_UnconfirmedWhenCallerGoes(t *testing.T) {
	a := openLeaseDB(t)
	bg := context.Background()
	if _, err := a.ExecContext(bg, `INSERT INTO replica_leases (id, expires_at, grants_acked, rules_acked)
		VALUES ('silent', now() + interval '1 hour', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	read := func() int64 {
		var n int64
		if err := a.QueryRowContext(bg, `SELECT n FROM `+storage.RulesVersionTable+` WHERE id = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for try := range 5 {
		before := read()
		ctx, cancel := context.WithTimeout(bg, storage.LeaseTerm/2)
		err := a.InTx(ctx, func(q storage.Querier) error {
			return storage.BumpVersion(ctx, q, storage.RulesVersionTable)
		})
		cancel()
		if errors.Is(err, storage.ErrUnconfirmed) {
			if got := read(); got != before+1 {
				t.Fatalf("the counter is %d, want the committed %d", got, before+1)
			}
			return
		}
		if err == nil {
			t.Fatal("InTx returned nil while a replica's lease ran unacknowledged and the call's context ended first")
		}
		t.Logf("try %d: the transaction outlived the context: %v; again", try, err)
	}
	t.Fatal("never ErrUnconfirmed")
}

// TestLease_SessionKilled: a replica whose lease session is ended by the
// server stops using its lease at once, and holds one again on a new
// session; changes made meanwhile on B, or on A itself, return and are
// seen by A's next read of the counters, lease or not.
func TestLease_SessionKilled(t *testing.T) {
	if storagetest.Dialect() == storage.Postgres {
		t.Skip("the replica tests run on PostgreSQL in the main run already")
	}
	dsn := storagetest.FreshSchema(t)
	a := openNamed(t, dsn, "lease-a")
	b := openNamed(t, dsn, "lease-b")
	holdLease(t, a)
	rules := storage.NewChangeVersion(a, storage.RulesVersionTable)
	for i := range 5 {
		waitHeld(t, a, true)
		terminate(t, `a.application_name = 'lease-a' AND a.query LIKE 'INSERT INTO replica_leases%'`)
		waitHeld(t, a, false)
		n, err := bumpRules(t, []*storage.DB{b, a}[i%2])
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if got, err := rules.Current(context.Background()); err != nil || got < n {
			t.Fatalf("round %d: A reads %d (%v) after the change to %d returned", i, got, err, n)
		}
	}
}

// TestLease_DecidesWithoutReads: while a replica holds its lease, its
// decisions take the counters from it, with no read: 1,000 questions cost
// (nearly) none, where without a lease each costs a read or a share of one.
func TestLease_DecidesWithoutReads(t *testing.T) {
	a := openLeaseDB(t)
	rules := storage.NewChangeVersion(a, storage.RulesVersionTable)
	holdLease(t, a)
	waitHeld(t, a, true)
	before := storage.BarrierReads(a)
	for range 1000 {
		if _, err := rules.Current(storage.Arrived(context.Background(), time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	reads := storage.BarrierReads(a) - before
	t.Logf("1000 questions, %d reads", reads)
	if reads >= 1000 {
		t.Fatalf("%d reads for 1000 questions with the lease held", reads)
	}
}
