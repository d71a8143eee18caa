package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func openT(t *testing.T, path string) *storage.DB {
	t.Helper()
	db, err := storage.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return fi.Mode().Perm()
}

func TestOpen_Modes(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string) string // returns the db path
	}{
		{"new nested directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "state", "metnos", "gateway.db")
		}},
		{"existing file with loose mode is tightened", func(t *testing.T, dir string) string {
			d := filepath.Join(dir, "db")
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(d, "gateway.db")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.prepare(t, t.TempDir())
			db := openT(t, p)
			if got := perm(t, filepath.Dir(p)); got != 0o700 {
				t.Errorf("directory mode = %o, want 700", got)
			}
			if got := perm(t, p); got != 0o600 {
				t.Errorf("file mode = %o, want 600", got)
			}
			// SQLite gives the WAL the database file's mode: no group/other bits either.
			if err := db.Ping(context.Background()); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(p + "-wal"); err == nil && fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("wal mode = %o, want no group/other bits", fi.Mode().Perm())
			}
		})
	}
}

func TestOpen_EmptyPathRefused(t *testing.T) {
	if _, err := storage.Open(context.Background(), ""); err == nil {
		t.Fatal("Open(\"\") succeeded, want an error")
	}
}

func TestOpen_Pragmas(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "g.db"))
	ctx := context.Background()
	cases := []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"busy_timeout", "5000"},
		{"foreign_keys", "1"},
	}
	for _, tc := range cases {
		t.Run(tc.pragma, func(t *testing.T) {
			// Several connections, so the pragma is known to be set on each.
			conns := make([]*sql.Conn, 3)
			for i := range conns {
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				conns[i] = c
			}
			for i, c := range conns {
				var got string
				if err := c.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if !strings.EqualFold(got, tc.want) {
					t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, tc.pragma, got, tc.want)
				}
			}
			for _, c := range conns {
				c.Close()
			}
		})
	}
}

func TestOpen_MigrationsIdempotent(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "g.db")
	if storage.SchemaVersion() < 1 {
		t.Fatalf("SchemaVersion() = %d, want >= 1", storage.SchemaVersion())
	}
	for i := range 3 {
		db, err := storage.Open(ctx, p)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		var rows, maxV int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM schema_version`).Scan(&rows, &maxV); err != nil {
			t.Fatal(err)
		}
		if maxV != storage.SchemaVersion() {
			t.Errorf("open #%d: schema version %d, want %d", i+1, maxV, storage.SchemaVersion())
		}
		if rows != storage.SchemaVersion() {
			t.Errorf("open #%d: %d schema_version rows, want %d (one per migration)", i+1, rows, storage.SchemaVersion())
		}
		// Data written by an earlier open survives the later ones.
		if err := storage.AppendAudit(ctx, db, storage.AuditEvent{Actor: "test", Event: storage.AuditNote}); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE event != 'chain_genesis'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != i+1 {
			t.Errorf("open #%d: %d audit rows, want %d", i+1, n, i+1)
		}
		db.Close()
	}
}

func TestOpen_TooNewRefused(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "g.db")
	db, err := storage.Open(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES ($1, 'future.sql', $2)`,
		storage.SchemaVersion()+1, storage.FormatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = storage.Open(ctx, p)
	if err == nil {
		db.Close()
		t.Fatal("Open of a database from a newer binary succeeded")
	}
	if !errors.Is(err, storage.ErrTooNew) {
		t.Fatalf("err = %v, want errors.Is ErrTooNew", err)
	}
}

func TestInTx_RollsBackOnError(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	boom := errors.New("boom")
	cases := []struct {
		name     string
		fnErr    error
		wantRows int
	}{
		{"commit", nil, 1},
		{"rollback", boom, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := db.ExecContext(ctx, `DELETE FROM audit`); err != nil {
				t.Fatal(err)
			}
			err := db.InTx(ctx, func(tx storage.Querier) error {
				if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{Actor: "a", Event: storage.AuditNote}); err != nil {
					return err
				}
				return tc.fnErr
			})
			if !errors.Is(err, tc.fnErr) || (tc.fnErr == nil) != (err == nil) {
				t.Fatalf("InTx err = %v, want %v", err, tc.fnErr)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM audit WHERE event != 'chain_genesis'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != tc.wantRows {
				t.Errorf("%d audit rows, want %d", n, tc.wantRows)
			}
		})
	}
}

func TestAudit_AppendList(t *testing.T) {
	ctx := context.Background()
	db := storagetest.Open(t)
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.FixedZone("CET", 3600))
	events := []storage.AuditEvent{
		{At: at, Actor: "roberto", Event: storage.AuditDecision, RequestID: "r1", Detail: map[string]any{"decision": "allow_once"}},
		{At: at.Add(time.Second), Actor: "policy", Event: storage.AuditOutcome, RequestID: "r2"},
		{At: at.Add(2 * time.Second), Actor: "roberto", Event: storage.AuditGrantWritten, RequestID: "r1", GrantID: 7},
	}
	for _, e := range events {
		if err := storage.AppendAudit(ctx, db, e); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		requestID string
		limit     int
		want      []string // events, newest first
	}{
		{"all", "", 10, []string{storage.AuditGrantWritten, storage.AuditOutcome, storage.AuditDecision}},
		{"limit", "", 1, []string{storage.AuditGrantWritten}},
		{"one request", "r1", 10, []string{storage.AuditGrantWritten, storage.AuditDecision}},
		{"unknown request", "nope", 10, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := storage.ListAudit(ctx, db, tc.requestID, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range got {
				names = append(names, e.Event)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("events = %v, want %v", names, tc.want)
			}
		})
	}
	t.Run("fields round-trip", func(t *testing.T) {
		got, err := storage.ListAudit(ctx, db, "r1", 10)
		if err != nil {
			t.Fatal(err)
		}
		last := got[1]
		if !last.At.Equal(at.Truncate(time.Microsecond)) || last.At.Location() != time.UTC {
			t.Errorf("At = %v, want %v in UTC", last.At, at)
		}
		if last.Actor != "roberto" || last.Detail["decision"] != "allow_once" {
			t.Errorf("row = %+v", last)
		}
		if got[0].GrantID != 7 {
			t.Errorf("GrantID = %d, want 7", got[0].GrantID)
		}
	})
}

func TestFormatTime_SortsAsTime(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		a, b time.Time
	}{
		{"microsecond", base, base.Add(time.Microsecond)},
		{"whole second vs fraction", base, base.Add(999 * time.Millisecond)},
		{"other zone", base.In(time.FixedZone("X", -7*3600)), base.Add(time.Hour)},
		{"year boundary", time.Date(2025, 12, 31, 23, 59, 59, 999999000, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sa, sb := storage.FormatTime(tc.a), storage.FormatTime(tc.b)
			if len(sa) != len(sb) || !(sa < sb) {
				t.Errorf("FormatTime(%v)=%q !< FormatTime(%v)=%q", tc.a, sa, tc.b, sb)
			}
			back, err := storage.ParseTime(sa)
			if err != nil || !back.Equal(tc.a) {
				t.Errorf("ParseTime(%q) = %v, %v; want %v", sa, back, err, tc.a)
			}
		})
	}
}
