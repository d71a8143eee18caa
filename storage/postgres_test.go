package storage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestPostgres runs this package's engine-neutral store tests again on
// PostgreSQL.
func TestPostgres(t *testing.T) {
	storagetest.RunOnPostgres(t, "^(TestInTx_|TestAudit_|TestDialect_|TestGroupTx_)")
}

// TestMigrations_SameOnBothEngines: every migration exists for both
// engines under the same number, so a database of either engine at
// version N has the same tables.
func TestMigrations_SameOnBothEngines(t *testing.T) {
	names := func(dir string) []string {
		entries, err := os.ReadDir("migrations/" + dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	sqlite, pg := names("sqlite"), names("postgres")
	if !slices.Equal(sqlite, pg) {
		t.Fatalf("migrations differ between engines:\n  sqlite:   %v\n  postgres: %v\n"+
			"write each migration for both (storage/migrations/<engine>/NNNN_name.sql)", sqlite, pg)
	}
}

// TestDialect_Version: a fresh database is at the binary's schema version.
func TestDialect_Version(t *testing.T) {
	db := storagetest.Open(t)
	v, err := db.Version(context.Background())
	if err != nil || v != storage.SchemaVersion() {
		t.Fatalf("Version = %d, %v; want %d", v, err, storage.SchemaVersion())
	}
	if db.Dialect != storagetest.Dialect() {
		t.Fatalf("Dialect = %s, want %s", db.Dialect, storagetest.Dialect())
	}
}

// TestDialect_NotifyOnSQLiteIsNoOp: with one process there is nobody to
// tell, and Listen returns at once.
func TestDialect_NotifyOnSQLiteIsNoOp(t *testing.T) {
	db := storagetest.OpenDialect(t, storage.SQLite)
	if err := db.Notify(context.Background(), db, "x"); err != nil {
		t.Fatal(err)
	}
	if err := db.Listen(context.Background(), nil, func(string) { t.Error("a notice on SQLite") }); err != nil {
		t.Fatal(err)
	}
}

// TestOpenPostgres_ReplicasMigrateOnce: replicas starting together on an
// empty schema migrate it once, one after the other, and all open.
func TestOpenPostgres_ReplicasMigrateOnce(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := storage.OpenPostgres(ctx, dsn)
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a replica failed to open: %v", err)
		}
	}
	db, err := storage.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_version`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != storage.SchemaVersion() {
		t.Fatalf("%d schema_version rows, want %d", rows, storage.SchemaVersion())
	}
}

func TestOpenPostgres_TooNewRefused(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	ctx := context.Background()
	db, err := storage.OpenPostgres(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, 'future.sql', $2)`,
		storage.SchemaVersion()+1, storage.FormatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err = storage.OpenPostgres(ctx, dsn); err == nil {
		db.Close()
		t.Fatal("a database from a newer binary was opened")
	}
	if !errors.Is(err, storage.ErrTooNew) {
		t.Fatalf("err = %v, want ErrTooNew", err)
	}
}

func TestOpenPostgres_Errors(t *testing.T) {
	ctx := context.Background()
	if _, err := storage.OpenPostgres(ctx, ""); err == nil || !strings.Contains(err.Error(), "GATEWAY_DATABASE_URL") {
		t.Errorf("empty DSN: %v", err)
	}
	_, err := storage.OpenPostgres(ctx, "postgres://u:sekrit-pw@127.0.0.1:1/db?connect_timeout=1")
	if err == nil {
		t.Fatal("unreachable server opened")
	}
	if strings.Contains(err.Error(), "sekrit-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
	if _, err := storage.OpenConfig(ctx, storage.Config{Driver: "mysql"}); err == nil {
		t.Error("unknown driver accepted")
	}
}

// collector gathers the notices a Listen delivers.
type collector struct {
	mu   sync.Mutex
	msgs []string
	ch   chan string
}

func newCollector() *collector { return &collector{ch: make(chan string, 100)} }

func (c *collector) add(m string) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
	c.ch <- m
}

func (c *collector) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-c.ch:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no notice within 5s")
		return ""
	}
}

// TestNotify_CommittedReachOthers: a notice queued in a transaction reaches
// the other handles on the database when it commits, never when it rolls
// back, and never the handle that sent it; every (re)connection is
// announced with "".
func TestNotify_CommittedReachOthers(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	a, b := openNamed(t, dsn, "notify-a"), openNamed(t, dsn, "notify-b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, own := newCollector(), newCollector()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = a.Listen(ctx, nil, got.add) }()
	go func() { defer wg.Done(); _ = b.Listen(ctx, nil, own.add) }()
	defer wg.Wait()
	defer cancel()
	if m := got.next(t); m != "" {
		t.Fatalf("first call %q, want the connection notice \"\"", m)
	}
	if m := own.next(t); m != "" {
		t.Fatalf("first call %q, want \"\"", m)
	}
	boom := errors.New("boom")
	if err := b.InTx(ctx, func(tx storage.Querier) error {
		if err := b.Notify(ctx, tx, "rolled back"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := b.InTx(ctx, func(tx storage.Querier) error { return b.Notify(ctx, tx, "req r1") }); err != nil {
		t.Fatal(err)
	}
	if err := b.Notify(ctx, b, "req r2"); err != nil {
		t.Fatal(err)
	}
	if m := got.next(t); m != "req r1" {
		t.Fatalf("got %q, want req r1 (the rolled-back notice must never arrive)", m)
	}
	if m := got.next(t); m != "req r2" {
		t.Fatalf("got %q, want req r2", m)
	}
	// a hears b; b never hears itself.
	if err := a.Notify(ctx, a, "from a"); err != nil {
		t.Fatal(err)
	}
	if m := own.next(t); m != "from a" {
		t.Fatalf("b got %q, want from a", m)
	}
	select {
	case m := <-got.ch:
		t.Fatalf("a heard its own notice %q", m)
	case <-time.After(200 * time.Millisecond):
	}
	// The session dies: Listen reconnects and says so with "".
	terminate(t, `application_name = 'notify-a' AND query LIKE 'LISTEN%'`)
	if m := got.next(t); m != "" {
		t.Fatalf("after the session died: %q, want the reconnection notice", m)
	}
	if err := b.Notify(ctx, b, "req r3"); err != nil {
		t.Fatal(err)
	}
	if m := got.next(t); m != "req r3" {
		t.Fatalf("after reconnecting: %q, want req r3", m)
	}
}

// openNamed opens a handle on the database of dsn whose sessions carry
// application_name name, so a test can find and end them.
func openNamed(t *testing.T, dsn, name string) *storage.DB {
	t.Helper()
	db, err := storage.OpenPostgres(context.Background(), storagetest.WithParam(dsn, "application_name", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// terminate ends the server sessions that match where (a condition on
// pg_stat_activity, joined with pg_locks as l), as a crash of their
// process or a network cut would.
func terminate(t *testing.T, where string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storagetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT COUNT(pg_terminate_backend(a.pid)) FROM pg_stat_activity a
		LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.granted
		WHERE a.pid <> pg_backend_pid() AND `+where).Scan(&n)
	if err != nil || n == 0 {
		t.Fatalf("terminate sessions where %s: %d ended, %v", where, n, err)
	}
}

// leaderProbe runs Lead on one handle and records its terms.
type leaderProbe struct {
	leading atomic.Bool
	terms   atomic.Int32
	done    chan error
	cancel  context.CancelFunc
}

func lead(t *testing.T, db *storage.DB, retry time.Duration) *leaderProbe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &leaderProbe{done: make(chan error, 1), cancel: cancel}
	go func() {
		p.done <- db.Lead(ctx, storage.LeaderOptions{Retry: retry}, func(ctx context.Context) error {
			if !p.leading.CompareAndSwap(false, true) {
				t.Error("two terms at once in one process")
			}
			p.terms.Add(1)
			<-ctx.Done()
			p.leading.Store(false)
			return nil
		})
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *leaderProbe) stop(t *testing.T) {
	p.cancel()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("Lead: %v", err)
		}
		p.done <- nil // a second stop returns at once
	case <-time.After(10 * time.Second):
		t.Error("Lead did not return 10s after its context ended")
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// TestLead_OneLeaderAndTakeover: of three handles on one database exactly
// one leads; when it stops (a clean shutdown) or its session dies (a crash
// as the server sees it), another takes over within the retry interval,
// and a leader whose session died steps down. Two schemas have a leader
// each.
func TestLead_OneLeaderAndTakeover(t *testing.T) {
	const retry = 100 * time.Millisecond
	dsn := storagetest.FreshSchema(t)
	names := []string{"lead-a", "lead-b", "lead-c"}
	var probes []*leaderProbe
	for _, n := range names {
		probes = append(probes, lead(t, openNamed(t, dsn, n), retry))
	}
	other := storagetest.OpenDialect(t, storage.Postgres) // another schema
	otherProbe := lead(t, other, retry)
	leaders := func() (n int, who *leaderProbe) {
		for _, p := range probes {
			if p.leading.Load() {
				n, who = n+1, p
			}
		}
		return n, who
	}
	waitFor(t, 5*time.Second, "a leader", func() bool { n, _ := leaders(); return n == 1 })
	waitFor(t, 5*time.Second, "the other schema's leader", otherProbe.leading.Load)
	// Stay one leader for a while.
	for range 10 {
		time.Sleep(2 * retry)
		if n, _ := leaders(); n != 1 {
			t.Fatalf("%d leaders", n)
		}
	}
	// Clean stop of the leader: another takes over.
	_, first := leaders()
	first.stop(t)
	took := waitFor(t, 5*time.Second, "takeover after a clean stop", func() bool {
		n, who := leaders()
		return n == 1 && who != first
	})
	t.Logf("takeover after a clean stop: %s", took)
	// The new leader's session dies (as when its process is killed): it
	// steps down and the third handle takes over.
	_, second := leaders()
	terminate(t, `l.pid IS NOT NULL AND a.application_name = '`+names[slices.Index(probes, second)]+`'`)
	took = waitFor(t, 5*time.Second, "takeover after the leader's session died", func() bool {
		n, who := leaders()
		return n == 1 && who != second || n == 1 && second.terms.Load() > 1
	})
	t.Logf("takeover after the leader session died: %s", took)
	if n, _ := leaders(); n != 1 {
		t.Fatalf("%d leaders after the takeover", n)
	}
	if !otherProbe.leading.Load() {
		t.Error("the other schema's leader was disturbed")
	}
}

// TestLead_SQLiteAlwaysLeads: one process, always the leader.
func TestLead_SQLiteAlwaysLeads(t *testing.T) {
	db := storagetest.OpenDialect(t, storage.SQLite)
	var changes []bool
	ctx, cancel := context.WithCancel(context.Background())
	err := db.Lead(ctx, storage.LeaderOptions{OnChange: func(l bool) { changes = append(changes, l) }},
		func(ctx context.Context) error {
			cancel()
			<-ctx.Done()
			return nil
		})
	if err != nil || !slices.Equal(changes, []bool{true, false}) {
		t.Fatalf("Lead = %v, changes %v", err, changes)
	}
}

// TestGroupExec_PoolSessionsEnded: the pool's sessions end under the group
// writer (a server restart, a network cut): the groups sent on them fail
// whole, the writer goes on with new sessions, no session is left inside
// a transaction, every call that returned nil is stored with its audit
// row and every call that failed is not, and the chain is intact.
func TestGroupExec_PoolSessionsEnded(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.FreshSchema(t)
	db := openNamed(t, dsn, "gwtest-group-ended")
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	put := func(k string) error {
		return db.GroupExec(ctx, nil, `INSERT INTO items (k, v) VALUES ($1, 1) ON CONFLICT (k) DO NOTHING`, []any{k},
			func(tx storage.Querier, n int64) error {
				return storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "test", Event: storage.AuditNote, RequestID: k})
			})
	}
	var (
		mu     sync.Mutex
		stored []string
		failed []string
	)
	round := func(name string) {
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				k := fmt.Sprintf("%s-%d", name, i)
				err := put(k)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, k)
				} else {
					stored = append(stored, k)
				}
			})
		}
		wg.Wait()
	}
	round("before")
	if len(failed) != 0 {
		t.Fatalf("before the sessions ended: %d calls failed", len(failed))
	}
	terminate(t, `a.application_name = 'gwtest-group-ended'`)
	// Each failed group drops the session it was sent on; within a pool's
	// worth of rounds the writer is on new sessions.
	for r := range 2*10 + 2 {
		n := len(stored)
		round(fmt.Sprint("after", r))
		if len(stored)-n == 40 {
			break
		}
	}
	if last := stored[len(stored)-1]; !strings.HasPrefix(last, "after") {
		t.Fatalf("no call succeeded after the sessions ended (%d failed)", len(failed))
	}
	var inTx int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
		WHERE application_name = 'gwtest-group-ended' AND state LIKE 'idle in transaction%'`).Scan(&inTx); err != nil {
		t.Fatal(err)
	}
	if inTx != 0 {
		t.Errorf("%d sessions left idle inside a transaction", inTx)
	}
	for _, k := range stored {
		if n := countItems(t, db, fmt.Sprintf("WHERE k = '%s'", k)); n != 1 {
			t.Errorf("call %s returned nil; %d rows stored", k, n)
		}
	}
	for _, k := range failed {
		if n := countItems(t, db, fmt.Sprintf("WHERE k = '%s'", k)); n != 0 {
			t.Errorf("call %s failed; its row is stored", k)
		}
	}
	t.Logf("%d calls stored, %d failed with their sessions", len(stored), len(failed))
	wantIntact(t, db, len(stored)+1) // and the genesis row
}
