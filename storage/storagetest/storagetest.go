// Package storagetest opens fresh gateway databases for tests, on either
// engine, so that one store test suite runs on SQLite and on PostgreSQL.
//
// A test opens its database with Open; which engine it gets is the
// process's choice (GATEWAY_TEST_DIALECT, SQLite by default). A package
// runs its store tests on PostgreSQL too with one test that calls
// RunOnPostgres: it runs the same test binary again, on PostgreSQL, and
// reports its failures. The PostgreSQL server is GATEWAY_TEST_POSTGRES_DSN
// (.ci/run starts one and sets it); when that is empty, a server already
// running where .ci/postgres or a default install puts it is used; when
// none answers, the PostgreSQL tests skip and say so.
package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/metnos/gateway/storage"
)

// The environment of the tests.
const (
	// EnvDialect selects the engine of Open: "sqlite" (default) or "postgres".
	EnvDialect = "GATEWAY_TEST_DIALECT"
	// EnvPostgresDSN is the PostgreSQL server of the tests: a role that may
	// create schemas in its database.
	EnvPostgresDSN = "GATEWAY_TEST_POSTGRES_DSN"
)

// defaultDSNs are tried, in order, when EnvPostgresDSN is empty: the
// cluster .ci/postgres starts, then a default local install.
var defaultDSNs = []string{
	"postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable",
	"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
}

// Dialect is the engine Open uses in this process.
func Dialect() storage.Dialect {
	if storage.Dialect(os.Getenv(EnvDialect)) == storage.Postgres {
		return storage.Postgres
	}
	return storage.SQLite
}

// Open returns a fresh, migrated database on Dialect(), closed (and on
// PostgreSQL dropped) when the test ends.
func Open(tb testing.TB) *storage.DB { return OpenDialect(tb, Dialect()) }

// OpenDialect is Open on a given engine. On PostgreSQL it skips tb when no
// server can be reached (see PostgresDSN).
func OpenDialect(tb testing.TB, d storage.Dialect) *storage.DB {
	tb.Helper()
	ctx := context.Background()
	var db *storage.DB
	var err error
	switch d {
	case storage.Postgres:
		dsn := FreshSchema(tb)
		if db, err = storage.OpenPostgres(ctx, dsn); err == nil {
			schemaDSNs.Store(db, dsn)
			tb.Cleanup(func() { schemaDSNs.Delete(db) })
		}
	default:
		db, err = storage.Open(ctx, filepath.Join(tb.TempDir(), "state", "gateway.db"))
	}
	if err != nil {
		tb.Fatalf("open %s database: %v", d, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Reopen opens a second handle on the database of db, as another process
// would (the CLI beside a running server, another replica).
func Reopen(tb testing.TB, db *storage.DB) *storage.DB {
	tb.Helper()
	var other *storage.DB
	var err error
	if db.Dialect == storage.Postgres {
		dsn, ok := schemaDSNs.Load(db)
		if !ok {
			tb.Fatal("storagetest.Reopen: the database was not opened by storagetest")
		}
		other, err = storage.OpenPostgres(context.Background(), dsn.(string))
	} else {
		other, err = storage.Open(context.Background(), db.Path)
	}
	if err != nil {
		tb.Fatalf("reopen: %v", err)
	}
	tb.Cleanup(func() { other.Close() })
	return other
}

// schemaDSNs remembers the DSN of each database OpenDialect opened on
// PostgreSQL, for Reopen.
var schemaDSNs sync.Map // *storage.DB → string

var (
	dsnOnce sync.Once
	dsnVal  string
	dsnWhy  string
)

// PostgresDSN returns the DSN of the PostgreSQL server of the tests. It
// skips tb, saying how to get a server, only when GATEWAY_TEST_POSTGRES_DSN
// is empty and no server answers at the default places; a server named in
// the variable that does not answer fails the test.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	dsnOnce.Do(func() {
		if v := os.Getenv(EnvPostgresDSN); v != "" {
			if err := ping(v); err != nil {
				dsnWhy = fmt.Sprintf("%s is set but the server does not answer: %v", EnvPostgresDSN, err)
				return
			}
			dsnVal = v
			return
		}
		var errs []string
		for _, d := range defaultDSNs {
			if err := ping(d); err == nil {
				dsnVal = d
				return
			} else {
				errs = append(errs, err.Error())
			}
		}
		dsnWhy = "skip: " + EnvPostgresDSN + " is empty and no PostgreSQL server answers at " +
			strings.Join(defaultDSNs, " or ") + " (" + strings.Join(errs, "; ") + "). " +
			`Start one with: eval "$(.ci/postgres start)" (.ci/run does this)`
	})
	if dsnVal == "" {
		if strings.HasPrefix(dsnWhy, "skip: ") {
			tb.Skip("PostgreSQL tests skipped: " + strings.TrimPrefix(dsnWhy, "skip: "))
		}
		tb.Fatal(dsnWhy)
	}
	return dsnVal
}

func ping(dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// FreshSchema creates an empty schema on the test server and returns a
// DSN whose search_path selects it: a database of its own for one test
// (or for the gateway processes a test starts). The schema is dropped when
// the test ends.
func FreshSchema(tb testing.TB) string {
	tb.Helper()
	base := PostgresDSN(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "gwtest_" + hex.EncodeToString(b[:])
	if err := adminExec(base, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create test schema: %v", err)
	}
	tb.Cleanup(func() {
		if err := adminExec(base, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Logf("drop test schema %s: %v", schema, err)
		}
	})
	return WithParam(base, "search_path", schema)
}

// WithParam returns dsn with one more setting: a run-time parameter
// (search_path, application_name) or a connection setting.
func WithParam(dsn, key, value string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

func adminExec(dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

var resultRE = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// RunOnPostgres runs this package's tests whose names match pattern again,
// on PostgreSQL: the test binary runs itself with GATEWAY_TEST_DIALECT =
// postgres (and -race if it was built with it), so the same tests and the
// same Open helpers run on the other engine, and its failures fail t. In
// that child run it skips itself. Without a PostgreSQL server it skips,
// saying why.
func RunOnPostgres(t *testing.T, pattern string) {
	t.Helper()
	if Dialect() == storage.Postgres {
		t.Skip("this is the PostgreSQL run")
	}
	dsn := PostgresDSN(t)
	args := []string{"-test.run=" + pattern, "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if deadline, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(deadline).Round(time.Second).String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), EnvDialect+"="+string(storage.Postgres), EnvPostgresDSN+"="+dsn)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	counts := map[string]int{}
	var skipped []string
	for _, m := range resultRE.FindAllStringSubmatch(string(out), -1) {
		if !strings.Contains(m[2], "/") {
			counts[m[1]]++
			if m[1] == "SKIP" {
				skipped = append(skipped, m[2])
			}
		}
	}
	if err != nil {
		t.Fatalf("the tests matching %s failed on PostgreSQL (%v):\n%s", pattern, err, out)
	}
	if counts["PASS"] == 0 {
		t.Fatalf("no test matching %s ran on PostgreSQL:\n%s", pattern, out)
	}
	if testing.Verbose() {
		t.Logf("PostgreSQL run output:\n%s", out)
	}
	t.Logf("on PostgreSQL: %d tests passed, %d skipped %v, in %s", counts["PASS"], counts["SKIP"], skipped,
		time.Since(start).Round(time.Millisecond))
}
