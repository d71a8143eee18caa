//go:build soak

package soak

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
)

// soakDSN is SOAK_DSN: when set, every gateway of the run keeps its state
// on this PostgreSQL server instead of SQLite, each in a schema of its own
// (created on first use, named after the gateway's directory, so a
// restarted gateway finds its database again).
var soakDSN = os.Getenv("SOAK_DSN")

// storeName is what the report calls the store the gateways keep their
// state in.
func storeName() string {
	if soakDSN != "" {
		return "PostgreSQL"
	}
	return "SQLite"
}

var schemasMu sync.Mutex

// schemaDSN returns the DSN of dir's gateway: SOAK_DSN with its own
// schema first on the search_path, the schema created if needed.
func schemaDSN(dir string) (string, error) {
	sum := sha256.Sum256([]byte(dir))
	schema := "soak_" + hex.EncodeToString(sum[:8])
	schemasMu.Lock()
	defer schemasMu.Unlock()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, soakDSN)
	if err != nil {
		return "", fmt.Errorf("SOAK_DSN: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("SOAK_DSN: create schema: %w", err)
	}
	u, err := url.Parse(soakDSN)
	if err != nil || u.Scheme == "" {
		return "", fmt.Errorf("SOAK_DSN must be a postgres:// URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// openAuditDB opens the database of the gateway whose SQLite file would be
// path (its directory names its PostgreSQL schema under SOAK_DSN), and
// the transaction options that give every query one snapshot.
func openAuditDB(path string) (*sql.DB, *sql.TxOptions, error) {
	if soakDSN == "" {
		db, err := openRO(path)
		return db, &sql.TxOptions{ReadOnly: true}, err
	}
	dsn, err := schemaDSN(filepath.Dir(filepath.Dir(path))) // <dir>/state/gateway.db
	if err != nil {
		return nil, nil, err
	}
	db, err := sql.Open("pgx", dsn)
	return db, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}, err
}

// auditGapQuery counts the audit rows and the highest position: ids on
// SQLite (AUTOINCREMENT rolls back with its transaction), the chain's seq
// on PostgreSQL (an identity does not, so a killed writer leaves id gaps;
// seq is given under the chain's lock at commit and has none).
func auditGapQuery() string {
	if soakDSN == "" {
		return `SELECT COUNT(*), MAX(id) FROM audit`
	}
	return `SELECT COUNT(*), MAX(seq) FROM audit`
}

// storageTOML is the [storage] table of a gateway in dir.
func storageTOML(dbPath string) (toml string, env []string, err error) {
	if soakDSN == "" {
		return "[storage]\npath = " + fmt.Sprintf("%q", dbPath) + "\n", nil, nil
	}
	dsn, err := schemaDSN(filepath.Dir(filepath.Dir(dbPath)))
	if err != nil {
		return "", nil, err
	}
	return "[storage]\ndriver = \"postgres\"\n", []string{"GATEWAY_DATABASE_URL=" + dsn}, nil
}
