package discord

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/metnos/gateway/storage"
)

// A signed interaction stays valid for five minutes (the timestamp
// window), so a captured one could be posted again: the signature cannot
// tell. Every interaction has its own id; the ids handled are remembered
// for longer than the window, in the database (every replica and a
// restarted gateway know them), and a second copy is refused: the table
// discord_replays.
const (
	replayTTL        = 10 * time.Minute
	replayPruneEvery = time.Minute
)

// An id seen longer than replayTTL ago counts as new (and is seen now).
const insertReplay = `INSERT INTO discord_replays (interaction_id, seen_at) VALUES ($1, $2)
ON CONFLICT (interaction_id) DO UPDATE SET seen_at = excluded.seen_at WHERE discord_replays.seen_at < $3`

type replays struct {
	db  *storage.DB
	log *slog.Logger

	mu     sync.Mutex
	pruned time.Time
}

// firstTime records an interaction id and reports whether it is new. When
// the database cannot say, the interaction is refused (logged).
func (c *replays) firstTime(ctx context.Context, interactionID string) bool {
	now := time.Now()
	at, expired := storage.FormatTime(now), storage.FormatTime(now.Add(-replayTTL))
	ctx = context.WithoutCancel(ctx)
	res, err := c.db.ExecContext(ctx, insertReplay, interactionID, at, expired)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		c.log.Error("discord replay check failed; the interaction is refused", "err", err)
		return false
	}
	c.mu.Lock()
	due := now.Sub(c.pruned) >= replayPruneEvery
	if due {
		c.pruned = now
	}
	c.mu.Unlock()
	if due {
		if _, err := c.db.ExecContext(ctx, `DELETE FROM discord_replays WHERE seen_at < $1`, expired); err != nil {
			c.log.Warn("discord replay prune failed", "err", err)
		}
	}
	return n == 1
}
