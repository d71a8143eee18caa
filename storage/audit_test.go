package storage_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// appendN appends n plain audit rows, one transaction each.
func appendN(t *testing.T, db *storage.DB, n int, at time.Time) {
	t.Helper()
	for i := range n {
		err := storage.AppendAudit(context.Background(), db, storage.AuditEvent{
			At: at.Add(time.Duration(i) * time.Second), Actor: fmt.Sprintf("web:user%d", i%3), Event: storage.AuditDecision,
			RequestID: fmt.Sprintf("r%d", i), Detail: map[string]any{"decision": "allow_once", "capability": "fs:read"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func verify(t *testing.T, db *storage.DB) storage.AuditVerdict {
	t.Helper()
	v, err := db.VerifyAudit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func wantIntact(t *testing.T, db *storage.DB, rows int) storage.AuditVerdict {
	t.Helper()
	v := verify(t, db)
	if !v.OK || v.Rows != rows {
		t.Fatalf("verify = %q (rows %d), want intact with %d rows", v.Summary(), v.Rows, rows)
	}
	if want := fmt.Sprintf("ok: %d rows, chain intact", rows); v.Summary() != want {
		t.Fatalf("summary %q, want %q", v.Summary(), want)
	}
	return v
}

// TestAudit_ChainFresh: a new database starts its chain with the genesis
// row, every append is numbered and hashed, and the chain verifies.
func TestAudit_ChainFresh(t *testing.T) {
	db := storagetest.Open(t)
	wantIntact(t, db, 1) // the genesis row alone
	appendN(t, db, 10, time.Now())
	v := wantIntact(t, db, 11)
	rows, err := db.QueryAudit(context.Background(), storage.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 11 || rows[0].Event != storage.AuditGenesis {
		t.Fatalf("rows = %d, first %q; want 11, genesis first", len(rows), rows[0].Event)
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) || len(r.Hash) != 64 {
			t.Fatalf("row %d: seq %d hash %q", i, r.Seq, r.Hash)
		}
	}
	if v.LastHash != rows[10].Hash {
		t.Errorf("verdict last hash %s, row's %s", v.LastHash, rows[10].Hash)
	}
	// An anchor kept outside: the right hash passes, another fails.
	good := &storage.AuditAnchor{Seq: 5, Hash: rows[4].Hash}
	if v, err := db.VerifyAudit(context.Background(), good); err != nil || !v.OK {
		t.Fatalf("verify with the right anchor: %v %q", err, v.Summary())
	}
	bad := &storage.AuditAnchor{Seq: 5, Hash: rows[3].Hash}
	if v, err := db.VerifyAudit(context.Background(), bad); err != nil || v.OK || v.BadSeq != 5 {
		t.Fatalf("verify with a wrong anchor: %v %+v", err, v)
	}
	gone := &storage.AuditAnchor{Seq: 99, Hash: rows[3].Hash}
	if v, err := db.VerifyAudit(context.Background(), gone); err != nil || v.OK || v.Problem != "removed" {
		t.Fatalf("verify with an anchor past the end: %v %+v", err, v)
	}
}

// TestAudit_AppendNeedsTx: a plain *sql.DB cannot append (its row could
// not be sealed), nor a transaction begun around InTx and GroupTx (a raw
// *sql.Tx: its row would be written around the chain); the *storage.DB
// runs its own transaction.
func TestAudit_AppendNeedsTx(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	err := storage.AppendAudit(ctx, db.DB, storage.AuditEvent{Actor: "x", Event: "note"})
	if !errors.Is(err, storage.ErrAuditNeedsTx) {
		t.Fatalf("append through *sql.DB: %v, want ErrAuditNeedsTx", err)
	}
	tx, err := db.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "x", Event: "note"})
	if !errors.Is(err, storage.ErrAuditNeedsTx) {
		t.Fatalf("append through a raw *sql.Tx: %v, want ErrAuditNeedsTx", err)
	}
	rec, err := storage.PrepareAudit(storage.AuditEvent{Actor: "x", Event: "note"})
	if err != nil {
		t.Fatal(err)
	}
	if err := storage.AppendPrepared(ctx, tx, rec); !errors.Is(err, storage.ErrAuditNeedsTx) {
		t.Fatalf("prepared append through a raw *sql.Tx: %v, want ErrAuditNeedsTx", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := verify(t, db).Rows; n != 1 {
		t.Fatalf("rows = %d", n)
	}
}

// TestAudit_AgentAndCapabilityFilled: the filter columns come from the
// detail, else from the request or grant the row names, else from an
// agent actor.
func TestAudit_AgentAndCapabilityFilled(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	now := storage.FormatTime(time.Now())
	if _, err := db.ExecContext(ctx, `INSERT INTO requests (id, agent, call_id, status, outcome, reason, capability, target,
		grant_target, autonomy, channel, sender_id, intent, executor, summary, arg_keys, trace, notify, callback_url,
		created_at, expires_at) VALUES ('q1', 'bot', 'c1', 'pending', 'approval_required', '', 'mail:read', 't', 't',
		'Supervised', 'web', 'owner', '', '', '', '[]', '[]', '[]', '', $1, $1)`, now); err != nil {
		t.Fatal(err)
	}
	for _, e := range []storage.AuditEvent{
		{Actor: "web:owner", Event: storage.AuditNote, RequestID: "q1"},
		{Actor: "agent:lim", Event: storage.AuditRateLimited, Detail: map[string]any{"capability": "fs:write"}},
		{Actor: "cli:root", Event: storage.AuditGrantRevoked, GrantID: 4242},
	} {
		if err := storage.AppendAudit(ctx, db, e); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		f    storage.AuditFilter
		want string
	}{
		{"agent from the request", storage.AuditFilter{Agent: "bot"}, "note"},
		{"capability from the request", storage.AuditFilter{Capability: "mail:read"}, "note"},
		{"agent from the actor", storage.AuditFilter{Agent: "lim"}, "rate_limited"},
		{"capability from the detail", storage.AuditFilter{Capability: "fs:write"}, "rate_limited"},
		{"actor part", storage.AuditFilter{Actor: "root"}, "grant_revoked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := db.QueryAudit(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.Event)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
	wantIntact(t, db, 4)
}

// TestAudit_Filters: every filter, paging with After, and Newest.
func TestAudit_Filters(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	base := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	appendN(t, db, 9, base) // seq 2..10; actors user0,1,2 in turn; r0..r8
	seqs := func(f storage.AuditFilter) string {
		rows, err := db.QueryAudit(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, r := range rows {
			s = append(s, fmt.Sprint(r.Seq))
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name string
		f    storage.AuditFilter
		want string
	}{
		{"all", storage.AuditFilter{Event: storage.AuditDecision}, "2,3,4,5,6,7,8,9,10"},
		{"since", storage.AuditFilter{Since: base.Add(7 * time.Second), Until: base.Add(time.Hour)}, "9,10"},
		{"until", storage.AuditFilter{Until: base.Add(2 * time.Second), Event: storage.AuditDecision}, "2,3"},
		{"request", storage.AuditFilter{RequestID: "r4"}, "6"},
		{"actor", storage.AuditFilter{Actor: "web:user1"}, "3,6,9"},
		{"after and limit", storage.AuditFilter{After: 4, Limit: 3}, "5,6,7"},
		{"newest", storage.AuditFilter{Limit: 2, Newest: true}, "9,10"},
		{"event none", storage.AuditFilter{Event: "nope"}, ""},
		{"genesis", storage.AuditFilter{Event: storage.AuditGenesis}, "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := seqs(tc.f); got != tc.want {
				t.Fatalf("seqs %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAudit_ConcurrentAppends: 16 goroutines appending at once, half in
// their own transactions and half through group commit, keep one intact
// chain with no gap.
func TestAudit_ConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	const workers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				write := db.InTx
				if w%2 == 1 {
					write = db.GroupTx // group commit: several writers' rows in one transaction
				}
				err := write(ctx, func(tx storage.Querier) error {
					if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: fmt.Sprintf("w%d", w), Event: "note",
						Detail: map[string]any{"i": i}}); err != nil {
						return err
					}
					return storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: fmt.Sprintf("w%d", w), Event: "note2"})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantIntact(t, db, 1+workers*each*2)
}

// TestAudit_ReplicasOneChain: three processes on one PostgreSQL database
// (three pools) append at once, some holding a row lock another wants (the
// order that would deadlock if the chain's head were taken at the append),
// and the chain stays one, intact, with no gap.
func TestAudit_ReplicasOneChain(t *testing.T) {
	if storagetest.Dialect() != storage.Postgres {
		t.Skip("the replicas run on PostgreSQL (TestPostgres)")
	}
	ctx := context.Background()
	db := storagetest.Open(t)
	replicas := []*storage.DB{db, storagetest.Reopen(t, db), storagetest.Reopen(t, db)}
	if _, err := db.ExecContext(ctx, `CREATE TABLE shared (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO shared VALUES (1, 0)`); err != nil {
		t.Fatal(err)
	}
	const perReplica, each = 6, 20
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*perReplica)
	for ri, r := range replicas {
		for w := range perReplica {
			wg.Go(func() {
				for i := range each {
					err := r.InTx(ctx, func(tx storage.Querier) error {
						appendOne := func() error {
							return storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: fmt.Sprintf("replica%d", ri),
								Event: "note", Detail: map[string]any{"w": w, "i": i}})
						}
						bump := func() error {
							_, err := tx.ExecContext(ctx, `UPDATE shared SET n = n + 1 WHERE id = 1`)
							return err
						}
						if (w+i)%2 == 0 {
							if err := appendOne(); err != nil {
								return err
							}
							return bump()
						}
						if err := bump(); err != nil {
							return err
						}
						return appendOne()
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantIntact(t, db, 1+len(replicas)*perReplica*each)
}

// TestAudit_MigratedDatabaseStartsWithGenesis: a database written before
// the chain keeps its rows (not covered) and the chain starts with a
// genesis row after them.
func TestAudit_MigratedDatabaseStartsWithGenesis(t *testing.T) {
	if storagetest.Dialect() != storage.SQLite {
		t.Skip("built with the sqlite3 tool")
	}
	sqlite3 := needSQLite3(t)
	path := filepath.Join(t.TempDir(), "old.db")
	var script strings.Builder
	script.WriteString("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);\n")
	for i, name := range []string{"0001_grants.sql", "0002_requests.sql", "0003_grants_version.sql"} {
		b, err := os.ReadFile(filepath.Join("migrations", "sqlite", name))
		if err != nil {
			t.Fatal(err)
		}
		script.Write(b)
		fmt.Fprintf(&script, "\nINSERT INTO schema_version VALUES (%d, '%s', '2026-01-01T00:00:00.000000Z');\n", i+1, name)
	}
	script.WriteString(`INSERT INTO audit (at, actor, event, request_id) VALUES
		('2026-01-01T00:00:01.000000Z', 'agent:a', 'outcome', 'old1'),
		('2026-01-01T00:00:02.000000Z', 'web:owner', 'decision', 'old1');`)
	runSQLite3(t, sqlite3, path, script.String())
	db := openT(t, path)
	v := verify(t, db)
	if !v.OK || v.Rows != 1 || v.Legacy != 2 || v.FirstSeq != 3 {
		t.Fatalf("verdict %+v, want intact, 1 row, 2 legacy, genesis at 3", v)
	}
	if !strings.Contains(v.Summary(), "2 older rows predate the chain") {
		t.Errorf("summary %q", v.Summary())
	}
	appendN(t, db, 3, time.Now())
	if v := verify(t, db); !v.OK || v.Rows != 4 {
		t.Fatalf("after appends: %+v", v)
	}
	// Reopening does not start a second chain.
	db.Close()
	db = openT(t, path)
	if v := verify(t, db); !v.OK || v.Rows != 4 {
		t.Fatalf("after reopen: %+v", v)
	}
}

// prune runs what the prune job does with the audit in one transaction.
func prune(t *testing.T, db *storage.DB, before time.Time) storage.AuditPruned {
	t.Helper()
	ctx := context.Background()
	var p storage.AuditPruned
	err := db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		if p, err = storage.PruneAudit(ctx, tx, before, false); err != nil {
			return err
		}
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "prune", Event: storage.AuditPrune, Detail: p.Detail()})
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAudit_PrunedChainVerifies: pruning leaves a checkpoint; the chain
// still verifies after one and after two passes.
func TestAudit_PrunedChainVerifies(t *testing.T) {
	db := storagetest.Open(t)
	old := time.Now().Add(-48 * time.Hour)
	appendN(t, db, 5, old)        // seq 2..6, old
	appendN(t, db, 3, time.Now()) // seq 7..9, recent
	p := prune(t, db, time.Now().Add(-24*time.Hour))
	// The genesis row is recent (written at open), so the old run from the
	// start is empty: nothing removed.
	if p.Removed != 0 {
		t.Fatalf("first pass removed %d, want 0 (the genesis row is recent)", p.Removed)
	}
	wantIntact(t, db, 10)
	// A second pass a while later: everything before the recent rows goes.
	p = prune(t, db, time.Now().Add(time.Minute))
	if p.Removed != 10 || p.CheckpointSeq != 10 {
		t.Fatalf("second pass %+v, want 10 removed, checkpoint at 10", p)
	}
	v := wantIntact(t, db, 2) // the checkpoint and the prune row
	if v.FirstSeq != 10 {
		t.Fatalf("first seq %d", v.FirstSeq)
	}
	appendN(t, db, 2, time.Now())
	wantIntact(t, db, 4)
	p = prune(t, db, time.Now().Add(time.Hour))
	if p.CheckpointSeq != 13 {
		t.Fatalf("third pass %+v, want checkpoint at 13", p)
	}
	wantIntact(t, db, 2)
}

// TestAudit_PrunedOldRows: rows older than the cut at the start of the
// chain go, the recent ones stay and verify.
func TestAudit_PrunedOldRows(t *testing.T) {
	db := storagetest.Open(t)
	ctx := context.Background()
	cut := time.Now().Add(time.Minute)
	appendN(t, db, 5, time.Now())                // seq 2..6
	appendN(t, db, 3, time.Now().Add(time.Hour)) // seq 7..9: after the cut
	p := prune(t, db, cut)
	if p.Removed != 6 || p.CheckpointSeq != 6 {
		t.Fatalf("pass %+v, want 6 removed, checkpoint at 6", p)
	}
	v := wantIntact(t, db, 5) // checkpoint 6, rows 7..9, prune row 10
	if v.FirstSeq != 6 || v.LastSeq != 10 {
		t.Fatalf("verdict %+v", v)
	}
	rows, err := db.QueryAudit(ctx, storage.AuditFilter{Event: storage.AuditCheckpoint})
	if err != nil || len(rows) != 1 || rows[0].Seq != 6 {
		t.Fatalf("checkpoint rows %v %v", rows, err)
	}
}

func needSQLite3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 tool is needed to tamper with the database (apt-get install sqlite3; .ci/run installs it)")
	}
	return p
}

func runSQLite3(t *testing.T, sqlite3, path, script string) {
	t.Helper()
	cmd := exec.Command(sqlite3, "-cmd", ".timeout 10000", path)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
}

// TestAudit_VerifyCatchesTampering edits the SQLite file with the sqlite3
// tool, as someone with the file would, and verify names the row.
func TestAudit_VerifyCatchesTampering(t *testing.T) {
	if storagetest.Dialect() != storage.SQLite {
		t.Skip("tampers with the SQLite file")
	}
	sqlite3 := needSQLite3(t)
	cases := []struct {
		name    string
		pruned  bool
		sql     string
		seq     int64
		problem string
		say     string
	}{
		{"detail edited", false, `UPDATE audit SET detail = replace(detail, 'allow_once', 'deny') WHERE seq = 5;`,
			5, "changed", "row 5 changed"},
		{"actor edited", false, `UPDATE audit SET actor = 'web:someone' WHERE seq = 4;`, 4, "changed", "row 4 changed"},
		{"agent column edited", false, `UPDATE audit SET agent = 'other' WHERE seq = 3;`, 3, "changed", "row 3 changed"},
		{"middle row deleted", false, `DELETE FROM audit WHERE seq = 5;`, 5, "removed", "row 5 was removed"},
		{"middle row deleted, rest renumbered", false,
			`DELETE FROM audit WHERE seq = 5; UPDATE audit SET seq = -(seq - 1) WHERE seq > 5; UPDATE audit SET seq = -seq WHERE seq < 0;
			 UPDATE audit_chain SET seq = seq - 1;`, 5, "changed", "row 5 changed"},
		{"row inserted", false,
			`UPDATE audit SET seq = -(seq + 1) WHERE seq >= 5; UPDATE audit SET seq = -seq WHERE seq < 0;
			 INSERT INTO audit (seq, at, actor, event, request_id, detail, hash, agent, capability)
			 SELECT 5, at, 'web:mallory', 'decision', 'rX', detail, hash, agent, capability FROM audit WHERE seq = 4;
			 UPDATE audit_chain SET seq = seq + 1;`, 5, "inserted", "row 5 was inserted"},
		{"last rows deleted", false, `DELETE FROM audit WHERE seq >= 9;`, 9, "removed", "rows 9 to 11 were removed from the end"},
		{"first rows deleted", false, `DELETE FROM audit WHERE seq <= 3;`, 3, "removed", "row 4 is the first of the chain"},
		{"hash erased", false, `UPDATE audit SET hash = NULL WHERE seq = 6;`, 6, "changed", "row 6 changed: its hash was erased"},
		{"pruned: middle row deleted", true, `DELETE FROM audit WHERE seq = 8;`, 8, "removed", "row 8 was removed"},
		{"pruned: detail edited", true, `UPDATE audit SET detail = '{}' WHERE seq = 8;`, 8, "changed", "row 8 changed"},
		{"pruned: head cut and a checkpoint forged", true,
			`DELETE FROM audit WHERE seq < 8; UPDATE audit SET event = 'chain_checkpoint', actor = 'prune', detail = '{}',
			 request_id = NULL, agent = NULL, capability = NULL WHERE seq = 8;`,
			8, "removed", "row 8 is a checkpoint that no prune row confirms"},
		{"pruned: checkpoint deleted", true, `DELETE FROM audit WHERE seq = 6;`, 6, "removed", "row 7 is the first of the chain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openT(t, filepath.Join(t.TempDir(), "g.db"))
			if tc.pruned {
				appendN(t, db, 5, time.Now().Add(-time.Hour)) // 2..6
				prune(t, db, time.Now().Add(time.Minute))     // checkpoint 6, prune row 7
				appendN(t, db, 4, time.Now())                 // 8..11
			} else {
				appendN(t, db, 10, time.Now()) // 2..11
			}
			wantIntact(t, db, map[bool]int{false: 11, true: 6}[tc.pruned])
			runSQLite3(t, sqlite3, db.Path, tc.sql)
			v := verify(t, db)
			if v.OK || v.BadSeq != tc.seq || v.Problem != tc.problem || !strings.Contains(v.Message, tc.say) {
				t.Fatalf("verdict %+v\nwant row %d %s, saying %q", v, tc.seq, tc.problem, tc.say)
			}
		})
	}
}
