package storage_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestDialect_ReplaysMoveIntoOneTable: migration 0023 moves the rows of
// slack_replays and discord_replays into replays under each messenger's
// name, and drops the old tables. The database is put back as it was
// before 0023 (its two tables, written by their own migrations) and 0023
// runs again over it.
func TestDialect_ReplaysMoveIntoOneTable(t *testing.T) {
	db := storagetest.Open(t)
	ctx := context.Background()
	run := func(name string) {
		t.Helper()
		sql, err := os.ReadFile("migrations/" + string(db.Dialect) + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(sql)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := db.ExecContext(ctx, `DROP TABLE replays`); err != nil {
		t.Fatal(err)
	}
	run("0011_slack_replays.sql")
	run("0017_discord_replays.sql")
	at := storage.FormatTime(time.Unix(1700000000, 0))
	for _, q := range []string{
		`INSERT INTO slack_replays (key, seen_at) VALUES ('body:abc', $1)`,
		`INSERT INTO slack_replays (key, seen_at) VALUES ('x', $1)`,
		`INSERT INTO discord_replays (interaction_id, seen_at) VALUES ('x', $1)`,
	} {
		if _, err := db.ExecContext(ctx, q, at); err != nil {
			t.Fatal(err)
		}
	}
	run("0023_replays.sql")
	rows, err := db.QueryContext(ctx, `SELECT messenger, key, seen_at FROM replays ORDER BY messenger, key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var m, k, seen string
		if err := rows.Scan(&m, &k, &seen); err != nil {
			t.Fatal(err)
		}
		if seen != at {
			t.Errorf("%s|%s seen at %s, want %s", m, k, seen, at)
		}
		got = append(got, m+"|"+k)
	}
	if want := "discord|x slack|body:abc slack|x"; strings.Join(got, " ") != want {
		t.Errorf("replays after the move: %v, want %s", got, want)
	}
	for _, old := range []string{"slack_replays", "discord_replays"} {
		if _, err := db.ExecContext(ctx, `SELECT 1 FROM `+old); err == nil {
			t.Errorf("%s still there after the move", old)
		}
	}
}
