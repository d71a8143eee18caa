package approvals

import (
	"context"
	"fmt"
	"time"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	countHeldCards = `SELECT r.agent, COUNT(*) FROM cards c JOIN requests r ON r.id = c.request_id
	WHERE c.channel = $1 AND c.ref = $2 AND r.status = 'pending' GROUP BY r.agent ORDER BY r.agent`
)

// batchedRef is the ref of a card held back by the agent's
// cards_per_minute: its request waits on the web page, counted in the
// messenger's summary, and never gets a message of its own there.
const batchedRef = "batched"

// cardWindow is cards_per_minute's sliding window, and the least time
// between two summaries on one messenger.
const cardWindow = time.Minute

// overCardRate says whether agent has put its cards_per_minute of new
// cards on messenger in the last 60 s; when not, it counts one more.
func (s *Service) overCardRate(messenger, agent string) bool {
	if s.opts.CardsPerMinute == nil {
		return false
	}
	limit := s.opts.CardsPerMinute(agent)
	if limit <= 0 {
		return false
	}
	key := messenger + "\x00" + agent
	now := s.now()
	s.cardMu.Lock()
	defer s.cardMu.Unlock()
	times := s.cardTimes[key]
	for len(times) > 0 && now.Sub(times[0]) >= cardWindow {
		times = times[1:]
	}
	if len(times) >= limit {
		s.cardTimes[key] = times
		return true
	}
	s.cardTimes[key] = append(times, now)
	return false
}

// holdCard records that request id's card on messenger is held back
// (batched): in sync, never posted, counted by waitingBatched. When the
// request changed since it was read at rev (decided meanwhile), the card
// stays due now, so the change is recorded on the next round instead of
// being parked far in the future.
func (s *Service) holdCard(ctx context.Context, messenger, id string, gen, rev int64) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx), recordCardShown,
		batchedRef, string(StatusPending), id, farFuture, storage.FormatTime(s.now()), messenger, gen, rev)
	if err != nil {
		return fmt.Errorf("hold card of %s: %w", id, err)
	}
	return nil
}

// waitingBatched counts, per agent, the pending requests whose card on
// messenger is held back.
func (s *Service) waitingBatched(ctx context.Context, messenger string) ([]Waiting, error) {
	rows, err := s.db.QueryContext(ctx, countHeldCards, messenger, batchedRef)
	if err != nil {
		return nil, fmt.Errorf("count held cards: %w", err)
	}
	defer rows.Close()
	var out []Waiting
	for rows.Next() {
		var w Waiting
		if err := rows.Scan(&w.Agent, &w.N); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// summarizer sends a messenger's summary of held cards at most once a
// cardWindow, when cards were held since the last one. It lives in the
// messenger's dispatch loop.
type summarizer struct {
	held bool      // a card was held since the last summary
	last time.Time // when the last summary went out
}

// due says how long until a summary may go out (0: now; -1: none wanted).
func (z *summarizer) due(now time.Time) time.Duration {
	if !z.held {
		return -1
	}
	return max(z.last.Add(cardWindow).Sub(now), 0)
}

// summarize tells n how many requests wait without a card, when n can.
func (s *Service) summarize(ctx context.Context, n Notifier, z *summarizer) {
	z.held, z.last = false, s.now()
	sm, ok := n.(Summarizer)
	if !ok {
		return
	}
	waiting, err := s.waitingBatched(ctx, n.Name())
	if err != nil || len(waiting) == 0 {
		if err != nil {
			s.log.Error("cards: summary", "channel", n.Name(), "err", err)
		}
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	if err := sm.Summarize(sctx, waiting); err != nil && ctx.Err() == nil {
		s.log.Warn("cards: summary failed", "channel", n.Name(), "err", err)
		z.held = true // try again in a minute
	}
}
