package approvals

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	nextEscalation = `SELECT MIN(escalate_at) FROM requests WHERE escalate_at IS NOT NULL`
	nextReminder   = `SELECT MIN(remind_at) FROM requests WHERE remind_at IS NOT NULL`
	markEscalated  = `UPDATE requests SET escalate_at = NULL, escalated_at = $1, notify = $2, rev = rev + 1
	WHERE id = $3 AND status = 'pending' AND rev = $4 AND escalate_at IS NOT NULL`
	addCard = `INSERT INTO cards (request_id, channel, next_at) VALUES ($1, $2, $3)
	ON CONFLICT (request_id, channel) DO NOTHING`
	postponeReminder = `UPDATE requests SET remind_at = $1
	WHERE id = $2 AND status = 'pending' AND remind_at IS NOT NULL AND remind_at <= $3`
	selectOtherCards = `SELECT channel, ref FROM cards WHERE request_id = $1 AND ref IS NOT NULL AND ref != $2`
)

// Escalations and reminders are due times stored with the request
// (escalate_at, remind_at), so they survive restarts; RunTimers acts on
// them. Finishing a request clears both, so they stop at once.

// timerRecheck bounds how long RunTimers sleeps: a request created on
// another replica (which wakes no timer here) waits at most this long.
const timerRecheck = time.Second

// timerBatch bounds the requests one pass acts on.
const timerBatch = 100

// remindTimeout bounds one reminder send.
const remindTimeout = 15 * time.Second

// RunTimers escalates and reminds as the requests' due times come, until
// ctx ends. With several replicas only the leader runs it (each due time
// is also claimed with a conditional update, so two runs act once).
func (s *Service) RunTimers(ctx context.Context) {
	for ctx.Err() == nil {
		began := time.Now()
		_, err := s.EscalateDue(ctx)
		s.noteDB(ctx, began, err, "escalation pass")
		began = time.Now()
		_, err = s.RemindDue(ctx)
		s.noteDB(ctx, began, err, "reminder pass")
		t := time.NewTimer(s.nextTimer(ctx))
		select {
		case <-ctx.Done():
		case <-s.timerWake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Service) wakeTimers() {
	select {
	case s.timerWake <- struct{}{}:
	default:
	}
}

// nextTimer is how long until the next escalation or reminder is due,
// within [10ms, timerRecheck].
func (s *Service) nextTimer(ctx context.Context) time.Duration {
	wait := timerRecheck
	for _, q := range []string{
		nextEscalation,
		nextReminder,
	} {
		var next sql.NullString
		if err := s.db.QueryRowContext(ctx, q).Scan(&next); err != nil || !next.Valid {
			continue
		}
		if t, err := storage.ParseTime(next.String); err == nil {
			wait = min(wait, t.Sub(s.now()))
		}
	}
	return max(wait, 10*time.Millisecond)
}

func (s *Service) dueIDs(ctx context.Context, column string, now time.Time) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM requests WHERE `+column+` IS NOT NULL AND `+column+` <= $1
		AND status = 'pending' ORDER BY `+column+` LIMIT $2`, storage.FormatTime(now), timerBatch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// EscalateDue escalates every pending request whose escalate_at has
// passed: its card also goes to the route's escalate_to, every card of it
// says why ("no answer in 5m"), and the audit gets a row. It returns how
// many it escalated.
func (s *Service) EscalateDue(ctx context.Context) (int, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	ids, err := s.dueIDs(ctx, "escalate_at", now)
	if err != nil {
		return 0, fmt.Errorf("escalate: %w", err)
	}
	n := 0
	for _, id := range ids {
		ok, err := s.escalate(ctx, id, now)
		if err != nil {
			return n, fmt.Errorf("escalate request %s: %w", id, err)
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (s *Service) escalate(ctx context.Context, id string, now time.Time) (bool, error) {
	var r Request
	var done bool
	var added []string
	err := s.db.InTx(ctx, func(tx storage.Querier) error {
		var err error
		if r, err = getRequest(ctx, tx, id); err != nil || r.Status.Finished() {
			return err
		}
		notify := append([]string(nil), r.Notify...)
		for _, ch := range r.EscalateTo {
			if ch = s.cardChannel(ch); ch == "" || contains(notify, ch) {
				continue
			}
			notify = append(notify, ch)
			added = append(added, ch)
		}
		js, _ := json.Marshal(nonNil(notify))
		res, err := tx.ExecContext(ctx, markEscalated,
			storage.FormatTime(now), string(js), r.ID, r.Rev)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // changed meanwhile (an approval): the next pass tries again
		}
		for _, ch := range added {
			if _, err := tx.ExecContext(ctx, addCard, r.ID, ch, storage.FormatTime(now)); err != nil {
				return err
			}
		}
		// Every card shows the escalation line from now on.
		if _, err := tx.ExecContext(ctx, resetCards,
			storage.FormatTime(now), r.ID); err != nil {
			return err
		}
		if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: "escalation", Event: storage.AuditEscalated,
			RequestID: r.ID, Detail: map[string]any{"to": r.EscalateTo, "after": r.EscalateAfter.String(),
				"capability": r.Capability}}); err != nil {
			return err
		}
		for _, ch := range notify {
			if err := s.db.Notify(ctx, tx, noticeCards+ch); err != nil {
				return err
			}
		}
		r.Notify, r.EscalatedAt, r.Rev, done = notify, &now, r.Rev+1, true
		return nil
	})
	if err != nil || !done {
		return false, err
	}
	s.log.Info("request escalated", "request_id", r.ID, "agent", r.Agent, "capability", r.Capability,
		"after", r.EscalateAfter.String(), "to", r.EscalateTo)
	s.wakeAll(r.Notify)
	return true, nil
}

// RemindDue sends a reminder next to every card of each pending request
// whose remind_at has passed, and sets the next one remind_every later (a
// gateway that was down sends one reminder, not the ones it missed). It
// returns how many requests it reminded of.
func (s *Service) RemindDue(ctx context.Context) (int, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	ids, err := s.dueIDs(ctx, "remind_at", now)
	if err != nil {
		return 0, fmt.Errorf("remind: %w", err)
	}
	n := 0
	for _, id := range ids {
		r, err := s.Get(ctx, id)
		if err != nil {
			continue // pruned meanwhile
		}
		var next any
		if r.RemindEvery > 0 {
			next = storage.FormatTime(now.Add(r.RemindEvery))
		}
		res, err := s.db.ExecContext(ctx, postponeReminder,
			next, r.ID, storage.FormatTime(now))
		if err != nil {
			return n, fmt.Errorf("remind request %s: %w", id, err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			continue // finished, or another pass took it
		}
		n++
		s.remind(ctx, r)
	}
	return n, nil
}

// remind sends one reminder next to each posted card of r. A failed
// reminder is logged, not retried: the next one comes remind_every later.
func (s *Service) remind(ctx context.Context, r Request) {
	rows, err := s.db.QueryContext(ctx, selectOtherCards, r.ID,
		batchedRef)
	if err != nil {
		s.log.Error("reminder: list cards", "request_id", r.ID, "err", err)
		return
	}
	type card struct{ channel, ref string }
	var cs []card
	for rows.Next() {
		var c card
		if rows.Scan(&c.channel, &c.ref) == nil {
			cs = append(cs, c)
		}
	}
	rows.Close()
	for _, c := range cs {
		n, ok := s.notifiers[c.channel].(Reminder)
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, remindTimeout)
		err := n.Remind(rctx, r, c.ref)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.opts.Observer.SendFailed(c.channel)
			s.log.Warn("reminder not sent; the next one comes later", "channel", c.channel, "request_id", r.ID, "err", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
