package storage_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestUnavailable: the errors of a database that cannot be reached or is
// held (a PostgreSQL server cut off, a SQLite file another connection
// keeps locked) are Unavailable, as the real drivers return them; the
// errors of a bad statement are not.
func TestUnavailable(t *testing.T) {
	ctx := context.Background()
	if storage.Unavailable(nil) {
		t.Error("nil is unavailable")
	}
	if !storage.Unavailable(fmt.Errorf("decide: %w", storage.ErrBusy)) {
		t.Error("ErrBusy, wrapped, is not unavailable")
	}

	t.Run("sqlite", func(t *testing.T) {
		db := storagetest.OpenDialect(t, storage.SQLite)
		_, err := db.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (1, 'x', 'y')`)
		if err == nil || storage.Unavailable(err) {
			t.Errorf("a constraint error: %v, unavailable %v", err, storage.Unavailable(err))
		}
		// Another connection holds the write lock; this one does not wait.
		path := filepath.Join(t.TempDir(), "locked.db")
		open := func() *sql.DB {
			d, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			d.SetMaxOpenConns(1)
			t.Cleanup(func() { d.Close() })
			return d
		}
		holder, other := open(), open()
		if _, err := holder.ExecContext(ctx, `CREATE TABLE t (x)`); err != nil {
			t.Fatal(err)
		}
		tx, err := holder.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			t.Fatal(err)
		}
		_, err = other.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		if err == nil || !storage.Unavailable(err) {
			t.Errorf("a write while another holds the lock: %v, want an unavailable error", err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		dsn, cut := storagetest.CutDSN(t, storagetest.FreshSchema(t))
		db, err := storage.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `SELEC 1`); err == nil || storage.Unavailable(err) {
			t.Errorf("a syntax error: %v, unavailable %v", err, storage.Unavailable(err))
		}
		cut.Cut()
		err = db.Ping(ctx)
		if err == nil || !storage.Unavailable(err) {
			t.Errorf("server cut off: %v, want an unavailable error", err)
		}
		cut.Restore()
		if err := db.Ping(ctx); err != nil {
			t.Errorf("after the server came back: %v", err)
		}
	})
}

// TestOutage_LogsOnceEachWay: however many calls fail while the database
// is away, the outage is logged once when it starts and once when it ends;
// an error that is not an outage is left to the caller.
func TestOutage_LogsOnceEachWay(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var o storage.Outage
	down := fmt.Errorf("expire: %w", storage.ErrBusy)
	if o.Failed(log, "sweep", time.Now(), errors.New("syntax error")) || o.Down() {
		t.Fatal("an error that is not an outage started one")
	}
	o.Reached(log, time.Now())
	beforeOutage := time.Now()
	for i := range 50 {
		if !o.Failed(log, fmt.Sprint("work ", i%3), time.Now(), down) {
			t.Fatal("an unavailable error was not taken as an outage")
		}
	}
	// A call begun before the outage was seen that reached the database
	// does not end it.
	o.Reached(log, beforeOutage)
	if !o.Down() {
		t.Fatal("not down")
	}
	beforeEnd := time.Now()
	o.Reached(log, time.Now())
	o.Reached(log, time.Now())
	// A call begun before the end that failed does not start another.
	if !o.Failed(log, "late", beforeEnd, down) || o.Down() {
		t.Fatal("a failure begun before the database came back started an outage")
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], "database unreachable") ||
		!strings.Contains(lines[0], `work="work 0"`) ||
		!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "database reachable again") ||
		!strings.Contains(lines[1], "failures=50") {
		t.Fatalf("log:\n%s\nwant one ERROR line when the outage began and one INFO line when it ended", buf.String())
	}
	if o.Down() {
		t.Fatal("still down")
	}
}

// TestReady_SQLiteLocked: while another process holds the SQLite file's
// write lock, Ready says not ready (a read alone would still answer) and
// a write fails after the busy timeout instead of hanging, both
// Unavailable (503 on the API); once the lock is let go, both work.
func TestReady_SQLiteLocked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gw.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		t.Fatalf("ready before the lock: %v", err)
	}
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	holder, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("a read while another process writes: %v (WAL lets it answer)", err)
	}
	if err := db.Ready(ctx); err == nil || !storage.Unavailable(err) {
		t.Errorf("ready while another process holds the write lock: %v, want an unavailable error", err)
	}
	began := time.Now()
	err = db.InTx(ctx, func(q storage.Querier) error {
		_, err := q.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS walk (x)")
		return err
	})
	if err == nil || !storage.Unavailable(err) {
		t.Errorf("a write while another process holds the write lock: %v, want an unavailable error", err)
	}
	t.Logf("the write failed after %s", time.Since(began))
	if _, err := holder.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := db.Ready(ctx); err != nil {
		t.Errorf("ready once the lock is let go: %v", err)
	}
}
