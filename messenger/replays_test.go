package messenger_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestReplays_SharedAndExpiring: a key is refused a second time by
// any store over the same database (another replica, a restart); keys of
// one request go in together or not at all; a key older than the TTL
// counts as new; expired keys are deleted, each messenger's by itself.
func TestReplays_SharedAndExpiring(t *testing.T) {
	db := storagetest.Open(t)
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { return now }
	one := messenger.NewReplays(db, "slack", 10*time.Minute, clock, slog.New(slog.DiscardHandler))
	two := messenger.NewReplays(db, "slack", 10*time.Minute, clock, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if !one.FirstTime(ctx, "a", "") || two.FirstTime(ctx, "a") || one.FirstTime(ctx, "x", "a") {
		t.Fatal("a second copy of a key passed")
	}
	if !two.FirstTime(ctx, "x") {
		t.Error("a key of a refused request was kept")
	}
	if !one.FirstTime(ctx, "") {
		t.Error("a request with no key at all must pass")
	}
	now = now.Add(11 * time.Minute)
	if !two.FirstTime(ctx, "a") {
		t.Error("a key older than the TTL still blocks")
	}
	// Another messenger's keys are its own: the same key is new to it.
	other := messenger.NewReplays(db, "discord", 10*time.Minute, clock, slog.New(slog.DiscardHandler))
	if !other.FirstTime(ctx, "x") {
		t.Error("a key of one messenger blocks another's")
	}
	now = now.Add(11 * time.Minute)
	if !one.FirstTime(ctx, "b") {
		t.Fatal("a new key refused")
	}
	// Slack's prune deleted its expired keys, not Discord's.
	rows, err := db.QueryContext(ctx, `SELECT messenger, key FROM replays ORDER BY messenger, key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var m, k string
		if err := rows.Scan(&m, &k); err != nil {
			t.Fatal(err)
		}
		got = append(got, m+"|"+k)
	}
	if want := "discord|x slack|b"; strings.Join(got, " ") != want {
		t.Errorf("keys left after the prunes: %v, want %s", got, want)
	}
}

// TestPostgres runs the replay tests again on PostgreSQL.
func TestPostgres(t *testing.T) {
	storagetest.RunOnPostgres(t, "^TestReplays_")
}
