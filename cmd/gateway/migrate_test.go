package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestMigrate: `gateway migrate` brings the configured database, SQLite
// or PostgreSQL, to the binary's schema and prints its version; a second
// run changes nothing; the PostgreSQL password never shows.
func TestMigrate(t *testing.T) {
	cases := []struct {
		name   string
		driver string
	}{
		{"sqlite", "sqlite"},
		{"postgres", "postgres"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := map[string]string{"HOME": dir}
			store := "path = " + tomlString(filepath.Join(dir, "gw.db"))
			if tc.driver == "postgres" {
				env["GATEWAY_DATABASE_URL"] = storagetest.FreshSchema(t) // skips without a server
				store = `driver = "postgres"`
			}
			cfgPath := filepath.Join(dir, "gw.toml")
			if err := os.WriteFile(cfgPath, []byte("[storage]\n"+store+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				var out, errOut bytes.Buffer
				code := run(context.Background(), []string{"migrate", "--config", cfgPath}, nil, &out, &errOut,
					func(k string) string { return env[k] })
				if code != exitOK {
					t.Fatalf("run %d: exit %d: %s", i+1, code, errOut.String())
				}
				var rep migrateReport
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
					t.Fatalf("output %q: %v", out.String(), err)
				}
				if rep.Driver != tc.driver || rep.SchemaVersion != storage.SchemaVersion() || rep.Database == "" {
					t.Errorf("run %d: %+v, want driver %s at version %d", i+1, rep, tc.driver, storage.SchemaVersion())
				}
			}
		})
	}
	t.Run("unreachable postgres", func(t *testing.T) {
		dir := t.TempDir()
		cfgPath := filepath.Join(dir, "gw.toml")
		if err := os.WriteFile(cfgPath, []byte("[storage]\ndriver = \"postgres\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"HOME": dir,
			"GATEWAY_DATABASE_URL": "postgres://gw:pw-SECRET-77@127.0.0.1:1/gw?connect_timeout=2"}
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"migrate", "--config", cfgPath}, nil, &out, &errOut,
			func(k string) string { return env[k] })
		if code == exitOK || strings.Contains(errOut.String(), "SECRET") {
			t.Fatalf("exit %d, stderr %q: want a failure that does not show the password", code, errOut.String())
		}
	})
}

// tomlString quotes s as a TOML basic string (JSON escapes are TOML ones).
func tomlString(s string) string { b, _ := json.Marshal(s); return string(b) }
