package slack

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

// A signed Slack request stays valid for five minutes, so a captured one
// could be sent again within that window: the signature cannot tell. We
// remember what we handled for longer than the window, in the database,
// so every replica and a restarted gateway know it too, and a second copy
// is acknowledged and ignored.
const (
	replayTTL = 10 * time.Minute
	// replayPruneEvery is how often expired keys are deleted.
	replayPruneEvery = time.Minute
)

// errReplayed rolls back a firstTime whose keys were seen before.
var errReplayed = errors.New("replayed")

// replayStore is the set of handled keys, in the slack_replays table.
type replayStore struct {
	db  *storage.DB
	ttl time.Duration
	now func() time.Time
	log *slog.Logger

	mu     sync.Mutex
	pruned time.Time
}

func newReplayStore(db *storage.DB, ttl time.Duration, now func() time.Time, log *slog.Logger) *replayStore {
	return &replayStore{db: db, ttl: ttl, now: now, log: log}
}

// A key seen longer than the TTL ago counts as new (and is seen now).
const insertReplay = `INSERT INTO slack_replays (key, seen_at) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET seen_at = excluded.seen_at WHERE slack_replays.seen_at < $3`

// firstTime records keys and reports whether none of them was seen before,
// on any replica. Empty keys are ignored. A request is identified by more
// than one key (the body's hash, and the click's own ids) so that the same
// click sent over two transports, or re-signed, is still caught. All keys
// are recorded in one transaction, or none: two replicas handed the same
// request at once see one of them win. When the database cannot say, the
// request is ignored (logged): Slack's user clicks again.
func (c *replayStore) firstTime(ctx context.Context, keys ...string) bool {
	now := c.now()
	at, expired := storage.FormatTime(now), storage.FormatTime(now.Add(-c.ttl))
	ctx = context.WithoutCancel(ctx)
	err := c.db.InTx(ctx, func(tx storage.Querier) error {
		for _, k := range keys {
			if k == "" {
				continue
			}
			res, err := tx.ExecContext(ctx, insertReplay, k, at, expired)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				if err == nil {
					err = errReplayed
				}
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errReplayed) {
		c.log.Error("slack replay check failed; the request is ignored", "err", err)
	}
	if err == nil {
		c.prune(ctx, now, expired)
	}
	return err == nil
}

// prune deletes expired keys, at most once every replayPruneEvery.
func (c *replayStore) prune(ctx context.Context, now time.Time, expired string) {
	c.mu.Lock()
	due := now.Sub(c.pruned) >= replayPruneEvery
	if due {
		c.pruned = now
	}
	c.mu.Unlock()
	if due {
		if _, err := c.db.ExecContext(ctx, `DELETE FROM slack_replays WHERE seen_at < $1`, expired); err != nil {
			c.log.Warn("slack replay prune failed", "err", err)
		}
	}
}
