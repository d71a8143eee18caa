package messenger

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

// A signed platform request stays valid for a while (Slack's and
// Discord's five minutes), so a captured one could be sent again within
// that window: the signature cannot tell. A messenger remembers what it
// handled for longer than the window, in the database's replays table
// under its name, so every replica and a restarted gateway know it too,
// and a second copy is acknowledged and ignored.
const (
	// ReplayTTL is how long a handled key is remembered.
	ReplayTTL = 10 * time.Minute
	// replayPruneEvery is how often expired keys are deleted.
	replayPruneEvery = time.Minute
)

// errReplayed rolls back a FirstTime whose keys were seen before.
var errReplayed = errors.New("replayed")

// Replays is one messenger's set of handled keys.
type Replays struct {
	db   *storage.DB
	name string
	ttl  time.Duration
	now  func() time.Time
	log  *slog.Logger

	mu     sync.Mutex
	pruned time.Time
}

// NewReplays returns the handled keys of the messenger name, each
// remembered for ttl by the clock now.
func NewReplays(db *storage.DB, name string, ttl time.Duration, now func() time.Time, log *slog.Logger) *Replays {
	return &Replays{db: db, name: name, ttl: ttl, now: now, log: log}
}

// A key seen longer than the TTL ago counts as new (and is seen now).
const insertReplay = `INSERT INTO replays (messenger, key, seen_at) VALUES ($1, $2, $3)
ON CONFLICT (messenger, key) DO UPDATE SET seen_at = excluded.seen_at WHERE replays.seen_at < $4`

// FirstTime records keys and reports whether none of them was seen
// before, on any replica. Empty keys are ignored. A request may be
// identified by more than one key (a body's hash, and a click's own ids)
// so that the same click sent over two transports, or re-signed, is still
// caught. All keys are recorded in one transaction, or none: two replicas
// handed the same request at once see one of them win. When the database
// cannot say, the answer is false (logged): the request is ignored, and
// the person taps again.
func (c *Replays) FirstTime(ctx context.Context, keys ...string) bool {
	now := c.now()
	at, expired := storage.FormatTime(now), storage.FormatTime(now.Add(-c.ttl))
	ctx = context.WithoutCancel(ctx)
	err := c.db.InTx(ctx, func(tx storage.Querier) error {
		for _, k := range keys {
			if k == "" {
				continue
			}
			res, err := tx.ExecContext(ctx, insertReplay, c.name, k, at, expired)
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
		c.log.Error(c.name+" replay check failed; the request is ignored", "err", err)
	}
	if err == nil {
		c.prune(ctx, now, expired)
	}
	return err == nil
}

// prune deletes expired keys, at most once every replayPruneEvery.
func (c *Replays) prune(ctx context.Context, now time.Time, expired string) {
	c.mu.Lock()
	due := now.Sub(c.pruned) >= replayPruneEvery
	if due {
		c.pruned = now
	}
	c.mu.Unlock()
	if due {
		if _, err := c.db.ExecContext(ctx, `DELETE FROM replays WHERE messenger = $1 AND seen_at < $2`, c.name, expired); err != nil {
			c.log.Warn(c.name+" replay prune failed", "err", err)
		}
	}
}
