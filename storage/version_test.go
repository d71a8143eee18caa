package storage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// bumpGrants changes the grants table the way any grant write does: the
// triggers of migration 0003 move the counter.
func bumpGrants(t *testing.T, db *DB) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `UPDATE grants_version SET n = n + 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
}

// TestGrantsVersion_ChildProcess is the other process of
// TestGrantsVersion_SeesOtherProcess; it does nothing when run on its own.
func TestGrantsVersion_ChildProcess(t *testing.T) {
	path := os.Getenv("GATEWAY_TEST_VERSION_CHILD")
	if path == "" {
		t.Skip("helper process")
	}
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bumpGrants(t, db)
}

// TestGrantsVersion_SeesOtherProcess: with the WAL-index mapped, a version
// taken while nothing commits is answered without SQLite, and a commit by
// another process is seen on the very next call, as is one by another
// handle in this process.
func TestGrantsVersion_SeesOtherProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no shared mapping of the -shm file here")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := NewGrantsVersion(db)
	defer v.Close()
	first, err := v.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.wal.Load() == nil || v.snap.Load() == nil {
		t.Fatal("the -shm file was not mapped: every decision would query SQLite")
	}
	if again, _ := v.Current(ctx); again != first {
		t.Fatalf("version moved with no commit: %d then %d", first, again)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestGrantsVersion_ChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GATEWAY_TEST_VERSION_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	second, err := v.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatalf("a commit by another process was not seen: version still %d", first)
	}

	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	bumpGrants(t, other)
	if third, _ := v.Current(ctx); third == second {
		t.Fatalf("a commit by another handle was not seen: version still %d", second)
	}
}

// TestGrantsVersion_UnrelatedCommit: a commit to another table changes the
// header, costs one question to SQLite, and leaves the version unchanged.
func TestGrantsVersion_UnrelatedCommit(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v := NewGrantsVersion(db)
	defer v.Close()
	before, _ := v.Current(ctx)
	hdr := v.snap.Load().hdr
	if _, err := db.ExecContext(ctx, `CREATE TABLE unrelated (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	after, err := v.Current(ctx)
	if err != nil || after != before {
		t.Fatalf("version after an unrelated commit: %d, %v (want %d)", after, err, before)
	}
	if v.snap.Load().hdr == hdr {
		t.Fatal("the WAL-index header did not change with a commit")
	}
}

func BenchmarkGrantsVersion_Current(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "v.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	v := NewGrantsVersion(db)
	defer v.Close()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Current(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestGrantsVersion_GroupCommitsVouched: the group writer's own commits
// move the version's snapshot without a question to SQLite, and a commit
// by anyone else between them (another handle, as another process would;
// this process's InTx) breaks the chain: the very next call reads the
// counter and sees the change.
func TestGrantsVersion_GroupCommitsVouched(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no shared mapping of the -shm file here")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE items (k INTEGER)`); err != nil {
		t.Fatal(err)
	}
	v := NewGrantsVersion(db)
	defer v.Close()
	group := func() {
		t.Helper()
		if err := db.GroupTx(ctx, func(tx Querier) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO items (k) VALUES (1)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := v.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// With its statement closed, a question to SQLite would fail: the
	// calls below must not ask.
	v.mu.Lock()
	v.stmt.Close()
	v.mu.Unlock()
	for range 3 {
		group()
		got, err := v.Current(ctx)
		if err != nil || got != want {
			t.Fatalf("after a group commit: %d, %v (want %d, without asking SQLite)", got, err, want)
		}
		if h, _ := v.walHeader(); v.snap.Load().hdr != h {
			t.Fatal("the snapshot did not move to the group commit's header")
		}
	}
	v.mu.Lock()
	v.reset() // a working statement again, for the calls that must ask
	v.mu.Unlock()
	if got, err := v.Current(ctx); err != nil || got != want {
		t.Fatalf("after reset: %d, %v (want %d)", got, err, want)
	}
	for name, foreign := range map[string]func(){
		"another handle": func() { bumpGrants(t, other) },
		"this process's InTx": func() {
			if err := db.InTx(ctx, func(tx Querier) error {
				_, err := tx.ExecContext(ctx, `UPDATE grants_version SET n = n + 1 WHERE id = 1`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		group()
		foreign()
		group()
		got, err := v.Current(ctx)
		if err != nil || got == want {
			t.Fatalf("%s changed grants between group commits: version %d, %v (was %d)", name, got, err, want)
		}
		want = got
	}
}
