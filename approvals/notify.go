package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	nextNotificationDue = `SELECT MIN(next_at) FROM notifications WHERE delivery = $1`
	hurryNotifications  = `UPDATE notifications SET next_at = $1
	WHERE delivery = $2 AND attempts > 0 AND next_at > $1`
	deleteNotification        = `DELETE FROM notifications WHERE id = $1`
	recordNotificationFailure = `UPDATE notifications SET attempts = attempts + 1, next_at = $1, last_error = $2
	WHERE id = $3`
)

// EventNotification is the SSE event of the "web" delivery of
// [[policy.notify]]: a request was allowed without a person and matched a
// pattern. Only admin streams carry it.
const EventNotification = "command_notification"

// Notification is one delivery of "allowed, but tell me": the request as
// decided, and the pattern that asked for it.
type Notification struct {
	ID       int64 // the delivery's row: unique per (request, delivery, url)
	Request  Request
	Delivery string // policy.DeliverLog, DeliverWeb, DeliverWebhook, or a messenger's name
	URL      string // the webhook's, for DeliverWebhook
	Pattern  int    // the [[policy.notify]] that matched first, from 0
}

// PatternLabel names the pattern as logs and the audit do ("notify#1").
func (n Notification) PatternLabel() string {
	return policy.NotifyPattern{Index: n.Pattern}.Label()
}

// Announcer is implemented by a Notifier that can deliver notifications:
// a plain message (no buttons: there is nothing to decide) on its
// messenger. A messenger that implements it serves the delivery of its
// Name; the dispatcher retries its failures as it retries cards.
type Announcer interface {
	Announce(ctx context.Context, n Notification) error
}

// announcer is one delivery's sender, a messenger's or built in.
type announcer struct {
	name string
	send func(ctx context.Context, n Notification) error
}

// NotificationBody is what the webhook delivery POSTs: the agnx seed's
// command_notification, extended. SessionID is the request's
// session_id, else the session the hooks write at the head of call_id
// ("<session>/<tool call>"), else "".
type NotificationBody struct {
	Event      string         `json:"event"`
	RequestID  string         `json:"request_id"`
	Agent      string         `json:"agent"`
	Capability string         `json:"capability"`
	Target     string         `json:"target"`
	Outcome    policy.Outcome `json:"outcome"`
	Reason     string         `json:"reason"`
	SessionID  string         `json:"session_id"`
}

// NewNotificationBody is the webhook payload of r.
func NewNotificationBody(r Request) NotificationBody {
	session := r.SessionID
	if session == "" {
		// The hooks write the session at the head of call_id.
		if head, _, found := strings.Cut(r.CallID, "/"); found {
			session = head
		}
	}
	return NotificationBody{Event: EventNotification, RequestID: r.ID, Agent: r.Agent, Capability: r.Capability,
		Target: r.Target, Outcome: r.Outcome, Reason: r.Reason, SessionID: session}
}

// noticeRow is one delivery a matched request asks for.
type noticeRow struct {
	delivery, url string
	pattern       int
}

// matchNotify returns the deliveries an allowed request asks for: each
// matching pattern's, once per (delivery, url), the first pattern naming
// it recorded. Nil when nothing matches, at the cost of one map lookup
// when no pattern names the capability.
func (s *Service) matchNotify(c policy.Capability, sub Submission) []noticeRow {
	pats := s.opts.Notify.Match(policy.NotifySubject{Capability: c, Target: sub.Target, Agent: sub.Profile.Agent,
		Channel: sub.Channel, SenderID: sub.SenderID})
	if len(pats) == 0 {
		return nil
	}
	var out []noticeRow
	for _, p := range pats {
		for _, d := range p.Deliveries {
			row := noticeRow{delivery: d, pattern: p.Index}
			if d == policy.DeliverWebhook {
				row.url = p.WebhookURL
			}
			dup := false
			for _, o := range out {
				dup = dup || o.delivery == row.delivery && o.url == row.url
			}
			if !dup {
				out = append(out, row)
			}
		}
	}
	return out
}

const insertNotification = `INSERT INTO notifications (request_id, delivery, url, pattern, next_at) VALUES ($1, $2, $3, $4, $5)`

// insertNotifications queues rows in the transaction of the request's
// outcome, and tells the other replicas (the leader's dispatchers).
func (s *Service) insertNotifications(ctx context.Context, tx storage.Querier, id string, rows []noticeRow, now string) error {
	for _, n := range rows {
		if _, err := tx.ExecContext(ctx, insertNotification, id, n.delivery, n.url, n.pattern, now); err != nil {
			return fmt.Errorf("insert notification: %w", err)
		}
	}
	return s.db.Notify(ctx, tx, noticeNotifications)
}

// builtinAnnouncers are the deliveries the gateway makes itself: a log
// line, the admin SSE event, the signed webhook.
func (s *Service) builtinAnnouncers() []announcer {
	// The webhook's URL is the owner's, from the config file (no agent
	// names it), so it may be any address; a redirect would turn the POST
	// into a GET elsewhere: it counts as a failure.
	hookClient := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return []announcer{
		{name: policy.DeliverLog, send: func(ctx context.Context, n Notification) error {
			r := n.Request
			// The owner asked for this line: it names the target, as the
			// seed's log delivery names the command.
			s.log.LogAttrs(ctx, slog.LevelInfo, EventNotification, slog.String("request_id", r.ID),
				slog.String("agent", r.Agent), slog.String("capability", r.Capability), slog.String("target", r.Target),
				slog.String("outcome", string(r.Outcome)), slog.String("reason", r.Reason),
				slog.String("pattern", n.PatternLabel()))
			return nil
		}},
		{name: policy.DeliverWeb, send: func(_ context.Context, n Notification) error {
			s.hub.publish(Event{Kind: EventNotification, Request: n.Request})
			return nil
		}},
		{name: policy.DeliverWebhook, send: func(_ context.Context, n Notification) error {
			return s.postNotification(hookClient, n)
		}},
	}
}

// errNoWebhookKey drops a webhook delivery whose pattern is gone from the
// config: an unsigned body would be forgeable by anyone.
var errNoWebhookKey = errors.New("no webhook_secret for this webhook_url in the config")

func (s *Service) postNotification(client *http.Client, n Notification) error {
	var key []byte
	if s.opts.NotifyKey != nil {
		key = s.opts.NotifyKey(n.Pattern, n.URL)
	}
	if len(key) == 0 {
		return errNoWebhookKey
	}
	body, _ := json.Marshal(NewNotificationBody(n.Request))
	return s.callbacks.post(client, n.URL, body, Sign(key, body), "")
}

type dueNotice struct {
	id        int64
	requestID string
	url       string
	pattern   int
	attempts  int
}

const selectDueNotices = `SELECT id, request_id, url, pattern, attempts FROM notifications
WHERE delivery = $1 AND next_at <= $2 ORDER BY next_at, id LIMIT 50`

// announceOnce sends the due notifications of one delivery, as
// dispatchOnce sends cards: until none is due or a send fails; after
// failures, the first success makes every waiting one due.
func (s *Service) announceOnce(ctx context.Context, a announcer, recovering bool) round {
	var out round
	for ctx.Err() == nil {
		rows, err := s.db.QueryContext(ctx, selectDueNotices, a.name, storage.FormatTime(s.now()))
		if err != nil {
			s.log.Error("notifications: query", "delivery", a.name, "err", err)
			return out
		}
		var due []dueNotice
		for rows.Next() {
			var d dueNotice
			if err := rows.Scan(&d.id, &d.requestID, &d.url, &d.pattern, &d.attempts); err == nil {
				due = append(due, d)
			}
		}
		rows.Close()
		if len(due) == 0 {
			out.pause = s.nextDueIn(ctx, nextNotificationDue, a.name)
			return out
		}
		send := func(d dueNotice) (time.Duration, bool) { return s.announce(ctx, a, d) }
		if sendDue(ctx, due, &out, recovering, send, func() {
			_, _ = s.db.ExecContext(ctx, hurryNotifications, storage.FormatTime(s.now()), a.name)
		}) {
			return out
		}
	}
	return out
}

// announce sends one notification. Success deletes its row in the
// transaction of its "notified" audit row; a failure is retried with
// backoff (the messenger's retry-after honoured).
func (s *Service) announce(ctx context.Context, a announcer, d dueNotice) (time.Duration, bool) {
	r, err := s.Get(ctx, d.requestID)
	if errors.Is(err, ErrNotFound) {
		_, _ = s.db.ExecContext(ctx, deleteNotification, d.id)
		return 0, false
	}
	if err != nil {
		return 0, true
	}
	n := Notification{ID: d.id, Request: r, Delivery: a.name, URL: d.url, Pattern: d.pattern}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	err = a.send(sctx, n)
	cancel()
	if errors.Is(err, errNoWebhookKey) {
		s.log.Warn("notification dropped", "delivery", a.name, "request_id", r.ID, "pattern", n.PatternLabel(), "err", err)
		_, _ = s.db.ExecContext(ctx, deleteNotification, d.id)
		return 0, false
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, false
		}
		s.opts.Observer.SendFailed(a.name)
		wait := backoff(d.attempts)
		var ra RetryAfterError
		hinted := errors.As(err, &ra)
		if hinted {
			wait = max(wait, ra.RetryAfter())
		}
		s.log.Warn("notification failed; will retry", "delivery", a.name, "request_id", r.ID,
			"attempt", d.attempts+1, "retry_in", wait.String(), "err", err)
		_, _ = s.db.ExecContext(ctx, recordNotificationFailure, storage.FormatTime(s.now().Add(wait)), truncate(err.Error(), 500), d.id)
		if hinted {
			return ra.RetryAfter(), true
		}
		return 0, true
	}
	// Recorded even when shutdown began meanwhile: it was delivered.
	wctx := context.WithoutCancel(ctx)
	err = s.db.InTx(wctx, func(tx storage.Querier) error {
		res, err := tx.ExecContext(wctx, deleteNotification, d.id)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return err // already recorded (a replica that led before us)
		}
		if a.name == policy.DeliverWeb {
			// The other replicas' admin streams publish it too.
			if err := s.db.Notify(wctx, tx, noticeWebNotification+r.ID); err != nil {
				return err
			}
		}
		return storage.AppendAudit(wctx, tx, storage.AuditEvent{At: s.now().UTC(), Actor: "notify", Event: storage.AuditNotified,
			RequestID: r.ID, Detail: map[string]any{"delivery": a.name, "pattern": n.PatternLabel(), "agent": r.Agent,
				"capability": r.Capability}})
	})
	if err != nil {
		s.log.Error("notifications: record delivery", "delivery", a.name, "request_id", r.ID, "err", err)
	}
	return 0, false
}
