package approvals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// The statements of this file.
const (
	hurryCardRetries = `UPDATE cards SET next_at = $1
	WHERE channel = $2 AND attempts > 0 AND next_at > $1 AND next_at != $3`
	nextCardDue       = `SELECT MIN(next_at) FROM cards WHERE channel = $1`
	recordCardFailure = `UPDATE cards SET attempts = attempts + 1, next_at = $1, last_error = $2
	WHERE request_id = $3 AND channel = $4 AND gen = $5`
	// recordCardShown records what a card shows ($1 its ref, $2 the status):
	// in sync ($4, far future) unless request $3 changed meanwhile (its
	// rev is no longer $8): then due now ($5). Not over a reset ($7 gen).
	recordCardShown = `UPDATE cards SET ref = $1, shown_status = $2, attempts = 0,
	last_error = '', next_at = CASE WHEN EXISTS (SELECT 1 FROM requests WHERE id = $3 AND status = $2 AND rev = $8)
	THEN $4 ELSE $5 END
	WHERE request_id = $3 AND channel = $6 AND gen = $7`
	// recordCardShownLocked is recordCardShown on PostgreSQL. There a
	// statement reads what was committed when it began, so a decision
	// committing while the card was being sent (it makes the card due now)
	// would be overwritten with "in sync" and the card never edited. The
	// request's row is locked first: that waits for such a decision and
	// reads the request as it left it, or makes a later one wait for this
	// record, after which it makes the card due again. Decisions lock the
	// request before its cards, as this does.
	recordCardShownLocked = `WITH req AS (SELECT status, rev FROM requests WHERE id = $3 FOR SHARE)
	UPDATE cards SET ref = $1, shown_status = $2, attempts = 0,
	last_error = '', next_at = CASE WHEN EXISTS (SELECT 1 FROM req WHERE status = $2 AND rev = $8)
	THEN $4 ELSE $5 END
	WHERE request_id = $3 AND channel = $6 AND gen = $7`
	countNotifications = `SELECT COUNT(*) FROM notifications`
	resendCards        = `UPDATE cards SET ref = NULL, shown_status = NULL, next_at = $2, attempts = 0, gen = gen + 1
	WHERE channel = $1 AND request_id IN (SELECT id FROM requests WHERE status = 'pending')`
	selectCardRef     = `SELECT ref FROM cards WHERE request_id = $1 AND channel = $2`
	selectCardRequest = `SELECT request_id FROM cards WHERE channel = $1 AND ref = $2`
)

// Backoff bounds for failed card sends.
const (
	backoffBase = time.Second
	backoffMax  = time.Minute
	sendTimeout = 30 * time.Second
)

// idleRecheck is how often a dispatcher looks for due retries when nothing
// woke it (a variable so that a test can tell a wake from a recheck).
var idleRecheck = 5 * time.Second

type dueCard struct {
	requestID string
	ref       sql.NullString
	attempts  int
	gen       int64
}

const selectDueCards = `SELECT c.request_id, c.ref, c.attempts, c.gen FROM cards c
WHERE c.channel = $1 AND c.next_at <= $2 ORDER BY c.next_at LIMIT 50`

// channelPauseMax bounds the channel-wide pause after failures, so a
// messenger that comes back is noticed within it.
const channelPauseMax = 15 * time.Second

// dispatch drives every card of one messenger to show its request's status:
// post the pending ones, edit the finished ones, retry failures with
// backoff (honouring the messenger's retry-after). The state lives in the
// cards table, so nothing is lost across restarts.
//
// A failure pauses the whole channel, not just the card: while a messenger
// is down one probe goes out per pause (1 s doubling to channelPauseMax)
// instead of one call per pending card. The first success after failures
// makes every waiting card due at once, so the backlog drains right away.
//
// The notifications of [[policy.notify]] go through the same loop, one per
// delivery, with announceOnce as the round.
func (s *Service) dispatch(ctx context.Context, once func(ctx context.Context, recovering bool) round, wake <-chan struct{}) {
	failures := 0
	for ctx.Err() == nil {
		r := once(ctx, failures > 0)
		pause, hold := r.pause, r.hinted
		switch {
		case r.failed:
			failures++
			pause, hold = max(pause, min(backoff(failures-1), channelPauseMax)), true
		case r.sent && failures > 0:
			failures = 0
			continue // recovered: the backlog was made due; go on at once
		}
		if pause <= 0 {
			pause = idleRecheck
		}
		t := time.NewTimer(pause)
		if hold {
			// The messenger asked for a pause (429 retry-after) or is failing:
			// a new card must not wake us early, or every request in a storm
			// would be one more call into it. Its wake stays queued.
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		} else {
			select {
			case <-ctx.Done():
			case <-wake:
			case <-t.C:
			}
		}
		t.Stop()
	}
}

// cardRound is one round of n's card dispatcher: the due cards, then the
// summary of the cards held past cards_per_minute when its minute is up.
func (s *Service) cardRound(n Notifier) func(ctx context.Context, recovering bool) round {
	var z summarizer
	return func(ctx context.Context, recovering bool) round {
		r := s.dispatchOnce(ctx, n, recovering, &z)
		if d := z.due(s.now()); d == 0 {
			s.summarize(ctx, n, &z)
		} else if d > 0 && (r.pause <= 0 || d < r.pause) {
			r.pause = d // the summary's minute ends first
		}
		return r
	}
}

// round is what one dispatch round did.
type round struct {
	pause  time.Duration // how long to wait (0: the default idle recheck)
	hinted bool          // pause is the messenger's retry-after
	failed bool          // a send failed: the channel pauses
	sent   bool          // at least one send succeeded
}

// dispatchOnce handles the due cards until none is due or a send fails.
// After failures (recovering), the first success makes every card of the
// channel that waits for a retry due now.
func (s *Service) dispatchOnce(ctx context.Context, n Notifier, recovering bool, z *summarizer) round {
	var out round
	for ctx.Err() == nil {
		began := time.Now()
		rows, err := s.db.QueryContext(ctx, selectDueCards, n.Name(), storage.FormatTime(s.now()))
		s.noteDB(ctx, began, err, "cards: query", "channel", n.Name())
		if err != nil {
			return out
		}
		var due []dueCard
		for rows.Next() {
			var c dueCard
			if err := rows.Scan(&c.requestID, &c.ref, &c.attempts, &c.gen); err == nil {
				due = append(due, c)
			}
		}
		rows.Close()
		if len(due) == 0 {
			out.pause = s.nextDue(ctx, n.Name())
			return out
		}
		send := func(c dueCard) (time.Duration, bool) { return s.sendCard(ctx, n, c, z) }
		if sendDue(ctx, due, &out, recovering, send, func() {
			_, _ = s.db.ExecContext(ctx, hurryCardRetries,
				storage.FormatTime(s.now()), n.Name(), farFuture)
		}) {
			return out
		}
	}
	return out
}

// sendDue sends due items in order; send returns the pause the messenger
// asked for and whether it failed. It reports whether the round is over:
// a send failed, shutdown began, or the first success after failures
// (recovering) made everything waiting due at once (makeDue).
func sendDue[T any](ctx context.Context, due []T, out *round, recovering bool, send func(T) (time.Duration, bool),
	makeDue func()) bool {
	for _, d := range due {
		wait, failed := send(d)
		if failed {
			out.failed, out.pause, out.hinted = true, wait, wait > 0
			return true
		}
		if ctx.Err() != nil {
			return true
		}
		out.sent = true
		if recovering {
			makeDue()
			return true
		}
	}
	return false
}

func (s *Service) nextDue(ctx context.Context, channel string) time.Duration {
	return s.nextDueIn(ctx, nextCardDue, channel)
}

// nextDueIn is how long until the earliest next_at that query (one
// argument: the channel or delivery) finds, at most idleRecheck.
func (s *Service) nextDueIn(ctx context.Context, query, channel string) time.Duration {
	var next sql.NullString
	_ = s.db.QueryRowContext(ctx, query, channel).Scan(&next)
	if !next.Valid || next.String == farFuture {
		return 0
	}
	t, err := storage.ParseTime(next.String)
	if err != nil {
		return 0
	}
	return min(max(t.Sub(s.now()), 10*time.Millisecond), idleRecheck)
}

// sendCard posts or edits one card. It returns the retry-after pause the
// messenger asked for, when it did.
func (s *Service) sendCard(ctx context.Context, n Notifier, c dueCard, z *summarizer) (time.Duration, bool) {
	r, err := s.Get(ctx, c.requestID)
	if err != nil {
		return 0, false
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	ref := c.ref.String
	var span telemetry.Span
	defer func() { span.End() }()
	switch {
	case !c.ref.Valid && r.Status.Finished():
		// Never posted and already over: nothing to show or edit.
	case !c.ref.Valid && s.overCardRate(n.Name(), r.Agent):
		// Past the agent's cards_per_minute: no card of its own; the
		// messenger's summary counts it (the web page lists it).
		if err := s.holdCard(ctx, n.Name(), r.ID, c.gen, r.Rev); err != nil {
			s.log.Error("cards: hold", "channel", n.Name(), "request_id", r.ID, "err", err)
		}
		z.held = true
		return 0, false
	case !c.ref.Valid:
		sctx, span = s.startCard(sctx, n.Name(), r.ID, "card.post")
		ref, err = n.Post(sctx, r)
	case ref == batchedRef:
		// Held back, never posted: nothing to edit.
	default:
		sctx, span = s.startCard(sctx, n.Name(), r.ID, "card.update")
		err = n.Update(sctx, r, ref)
	}
	if err != nil {
		span.Fail("card not sent")
		if ctx.Err() != nil {
			return 0, false
		}
		s.opts.Observer.SendFailed(n.Name())
		wait := backoff(c.attempts)
		var ra RetryAfterError
		hinted := errors.As(err, &ra)
		if hinted {
			wait = max(wait, ra.RetryAfter())
		}
		s.log.Warn("card send failed; will retry", "channel", n.Name(), "request_id", r.ID,
			"attempt", c.attempts+1, "retry_in", wait.String(), "err", err)
		_, _ = s.db.ExecContext(ctx, recordCardFailure, storage.FormatTime(s.now().Add(wait)),
			truncate(err.Error(), 500), r.ID, n.Name(), c.gen)
		if hinted {
			return ra.RetryAfter(), true
		}
		return 0, true
	}
	// In sync unless the request changed while we were sending (its status,
	// or anything else the card shows: rev): then due now. Recorded even when shutdown began meanwhile (the message exists;
	// losing its id would post it twice after a restart), and not over a
	// reset made meanwhile (gen changed: a fresh post is wanted).
	record := recordCardShown
	if s.db.Dialect == storage.Postgres {
		record = recordCardShownLocked
	}
	_, err = s.db.ExecContext(context.WithoutCancel(ctx), record,
		sql.NullString{String: ref, Valid: ref != ""}, string(r.Status), r.ID, farFuture,
		storage.FormatTime(s.now()), n.Name(), c.gen, r.Rev)
	if err != nil {
		s.log.Error("cards: record send", "channel", n.Name(), "request_id", r.ID, "err", err)
	}
	return 0, false
}

func backoff(attempts int) time.Duration {
	d := backoffBase << min(attempts, 10)
	d = min(d, backoffMax)
	return d/2 + rand.N(d/2+1) // jitter: spread retries of many cards
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// RunDispatch runs one card dispatcher per messenger until ctx ends and
// their sends in flight finish. With several replicas only the leader runs
// it (see storage.DB.Lead), so a card is posted once; it may run again
// after it returned (a replica that leads again).
func (s *Service) RunDispatch(ctx context.Context) {
	s.dispatching.Add(1)
	defer s.dispatching.Add(-1)
	for name, n := range s.notifiers {
		s.goDispatch(ctx, s.cardRound(n), s.wake[name])
	}
	// Without patterns, the notification loops run only to finish what an
	// earlier config queued: no idle queries on a gateway that has none.
	var queued int
	if s.opts.Notify.Empty() {
		_ = s.db.QueryRowContext(ctx, countNotifications).Scan(&queued)
	}
	for name, a := range s.announcers {
		if s.opts.Notify.Empty() && queued == 0 {
			break
		}
		s.goDispatch(ctx, func(ctx context.Context, recovering bool) round {
			return s.announceOnce(ctx, a, recovering)
		}, s.announceWake[name])
	}
	<-ctx.Done()
	s.wg.Wait()
}

// Resend marks the cards of the pending requests whose card goes to one
// messenger for a fresh post (Telegram /pending): their old messages
// stay, new ones come. A request whose card goes elsewhere (a route to
// another messenger, the web page only) is never posted by it.
func (s *Service) Resend(ctx context.Context, channel string) (int, error) {
	if s.notifiers[channel] == nil {
		return 0, fmt.Errorf("%w: channel: %q is not configured", ErrInvalid, channel)
	}
	now := storage.FormatTime(s.now())
	res, err := s.db.ExecContext(ctx, resendCards,
		channel, now)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	s.wakeAll([]string{channel})
	if err := s.db.Notify(ctx, s.db, noticeCards+channel); err != nil {
		s.log.Warn("resend: the other replicas were not told; the leader's dispatcher finds the cards within seconds",
			"channel", channel, "err", err)
	}
	return int(n), nil
}

// CardRef returns the message reference of a request's card on a channel.
func (s *Service) CardRef(ctx context.Context, id, channel string) (string, error) {
	var ref sql.NullString
	err := s.db.QueryRowContext(ctx, selectCardRef, id, channel).Scan(&ref)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !ref.Valid {
		return "", ErrNotFound
	}
	return ref.String, err
}

// RequestByCardRef finds the request whose card on channel has ref (a
// reply to a Telegram message names only the message).
func (s *Service) RequestByCardRef(ctx context.Context, channel, ref string) (Request, error) {
	var id string
	err := s.db.QueryRowContext(ctx, selectCardRequest, channel, ref).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, ErrNotFound
	}
	if err != nil {
		return Request{}, err
	}
	return s.Get(ctx, id)
}
