package main

import (
	"flag"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/storage"
)

// storageConfig is the database the config names: storage.driver with
// storage.path (SQLite) or the DSN from the environment (PostgreSQL).
func storageConfig(cfg config.Config) storage.Config {
	return storage.Config{Driver: cfg.Storage.Driver, Path: cfg.Storage.Path, DSN: cfg.Storage.DSN}
}

// migrateReport is what `gateway migrate` prints.
type migrateReport struct {
	Driver        string `json:"driver"`
	Database      string `json:"database"` // the file, or the server and database (never the password)
	SchemaVersion int    `json:"schema_version"`
}

// cmdMigrate brings the configured database (SQLite or PostgreSQL) to this
// binary's schema and prints its version. `gateway serve` migrates too;
// running this first in a deploy fails early on a database that cannot be
// migrated (or is newer than the binary), before any replica restarts.
// Replicas that start at once on PostgreSQL migrate one after the other.
func cmdMigrate(e *env, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfgPath := configFlag(fs)
	if err := parseNoArgs(fs, "migrate", args); err != nil {
		return err
	}
	db, err := openDB(e, *cfgPath)
	if err != nil {
		return err
	}
	defer db.Close()
	v, err := db.Version(e.ctx)
	if err != nil {
		return err
	}
	return printJSONLine(e.stdout, migrateReport{Driver: string(db.Dialect), Database: db.Name(), SchemaVersion: v})
}
