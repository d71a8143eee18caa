package push

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/storage"
)

// The statements of this file.
const (
	selectSent = `SELECT subscription_id, status FROM push_sent WHERE request_id = $1`
	recordSent = `INSERT INTO push_sent (request_id, subscription_id, status, sent_at) VALUES ($1, $2, $3, $4)
	ON CONFLICT (request_id, subscription_id) DO UPDATE SET status = $3, sent_at = $4`
	selectSentDevices = `SELECT s.id, s.web_user, s.endpoint, s.p256dh, s.auth, s.device, s.created_at, s.last_push_at
	FROM push_sent p JOIN push_subscriptions s ON s.id = p.subscription_id
	WHERE p.request_id = $1 AND p.status != $2 ORDER BY s.created_at, s.id`
	pruneSent = `DELETE FROM push_sent WHERE sent_at < $1`
)

// Observer counts each push's outcome (one of the Result* values).
type Observer interface {
	Pushed(result string)
}

// Options are a Notifier's collaborators.
type Options struct {
	Keys Keys
	// Subscriber is the VAPID JWT's "sub": the gateway's https address
	// (web.public_url) or a mailto: contact, so a push service can reach
	// whoever runs it.
	Subscriber string
	HTTPClient *http.Client // nil: one with a 30 s timeout
	Locale     locale.Locale
	Logger     *slog.Logger
	Now        func() time.Time
	Observer   Observer // may be nil
	// UserExists says whether a web user is still configured: a removed
	// user's devices get no push (nil: every user is).
	UserExists func(name string) bool
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Notifier is the web users' devices as an approvals.Notifier: the card
// dispatcher calls Post for a new pending request and Update whenever it
// changed, retrying a failure with backoff (a 429's Retry-After honoured)
// from its durable queue. Each call pushes only to the devices that have
// not yet been told what the request now shows (push_sent): one push per
// device per request, and one update when it is decided or expires.
type Notifier struct {
	store   *Store
	actions *Actions
	db      *storage.DB
	opts    Options
}

// New returns the notifier.
func New(db *storage.DB, store *Store, actions *Actions, o Options) *Notifier {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	return &Notifier{store: store, actions: actions, db: db, opts: o}
}

// Name is the cards' channel of Web Push.
func (n *Notifier) Name() string { return approvals.ChannelWebPush }

// sentRef is the card reference of a request pushed at least once.
const sentRef = "push"

// Post pushes a new pending request to its approvers' devices.
func (n *Notifier) Post(ctx context.Context, r approvals.Request) (string, error) {
	return sentRef, n.deliver(ctx, r)
}

// Update pushes what changed: a finished request's outcome to every device
// that was told of it; a request still pending to the devices not told
// yet (one subscribed since, or an escalation).
func (n *Notifier) Update(ctx context.Context, r approvals.Request, _ string) error {
	return n.deliver(ctx, r)
}

func (n *Notifier) deliver(ctx context.Context, r approvals.Request) error {
	devices, err := n.due(ctx, r)
	if err != nil {
		return err
	}
	for _, d := range devices {
		if err := n.pushTo(ctx, r, d); err != nil {
			return err
		}
	}
	return nil
}

// due lists the devices r must be pushed to now.
func (n *Notifier) due(ctx context.Context, r approvals.Request) ([]Subscription, error) {
	if r.Status.Finished() {
		return n.store.query(ctx, selectSentDevices, r.ID, string(r.Status))
	}
	all, err := n.recipients(ctx, r)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	rows, err := n.db.QueryContext(ctx, selectSent, r.ID)
	if err != nil {
		return nil, fmt.Errorf("push: read what was sent: %w", err)
	}
	defer rows.Close()
	sent := map[string]bool{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		sent[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Subscription
	for _, d := range all {
		if !sent[d.ID] {
			out = append(out, d)
		}
	}
	return out, nil
}

// recipients are the devices of the web users who may decide r: those
// its route names ("web:<name>"), or, with no approvers in the route,
// every web user's.
func (n *Notifier) recipients(ctx context.Context, r approvals.Request) ([]Subscription, error) {
	all, err := n.approverDevices(ctx, r)
	if err != nil || n.opts.UserExists == nil {
		return all, err
	}
	out := all[:0]
	for _, d := range all {
		if n.opts.UserExists(d.User) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (n *Notifier) approverDevices(ctx context.Context, r approvals.Request) ([]Subscription, error) {
	if len(r.Approvers) == 0 {
		return n.store.All(ctx)
	}
	var out []Subscription
	seen := map[string]bool{}
	for _, a := range r.Approvers {
		user, ok := strings.CutPrefix(a, approvals.ChannelWeb+":")
		if !ok || seen[user] {
			continue
		}
		seen[user] = true
		ds, err := n.store.List(ctx, user)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
	}
	return out, nil
}

// pushTo pushes r as it stands to one device and records it. A device
// the push service says is gone is removed; a push it refuses for good
// (another 4xx) is given up, so one broken device never holds the others.
func (n *Notifier) pushTo(ctx context.Context, r approvals.Request, d Subscription) error {
	payload, err := n.payload(ctx, r, d.User)
	if err != nil {
		return err
	}
	ttl, urgency := 24*time.Hour, webpush.UrgencyNormal
	if r.Status == approvals.StatusPending {
		ttl, urgency = r.ExpiresAt.Sub(n.opts.now()), webpush.UrgencyHigh
	}
	out := n.send(ctx, d, payload, ttl, urgency, topicOf(r.ID))
	if n.opts.Observer != nil {
		n.opts.Observer.Pushed(out.result)
	}
	switch out.result {
	case ResultGone:
		n.opts.Logger.Info("push subscription gone; removed", "user", d.User, "subscription", d.ID, "request_id", r.ID)
		return n.store.Drop(ctx, d.ID)
	case ResultRateLimited:
		return RetryAfter{Wait: out.wait}
	case ResultFailed:
		return out.err
	case ResultRefused:
		n.opts.Logger.Warn("push refused; given up for this device", "user", d.User, "subscription", d.ID,
			"request_id", r.ID, "err", out.err)
	default:
		n.store.touch(ctx, d.ID)
	}
	if _, err := n.db.ExecContext(context.WithoutCancel(ctx), recordSent, r.ID, d.ID, string(r.Status),
		storage.FormatTime(n.opts.now())); err != nil {
		return fmt.Errorf("push: record a push: %w", err)
	}
	return nil
}

// topicOf is the Topic header (RFC 8030 §5.4) that lets the push service
// replace an undelivered push of the same request: at most 32 characters
// of the base64url alphabet, which request ids are.
func topicOf(id string) string {
	if len(id) > 32 {
		return ""
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return id
}

// Prune forgets what was pushed about requests older than retention, and
// the spent action tokens.
func (n *Notifier) Prune(ctx context.Context, retention time.Duration) {
	_, _ = n.db.ExecContext(ctx, pruneSent, storage.FormatTime(n.opts.now().Add(-retention)))
	n.actions.Prune(ctx)
}
