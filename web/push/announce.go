package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/metnos/gateway/storage"
)

// announced is what push_sent records of a device an announcement key
// was pushed to (or given up on).
const announced = "announced"

// Announce pushes a notice that is no request (the weekly review of
// grants) to every device of every web user: no action, no token. key
// names this announcement ("review:<week>"): a device it was pushed to
// (push_sent) is skipped, so the caller retries a failed Announce until it
// succeeds and each device gets it once. A device the push service says
// is gone is removed; one that refuses it for good is given up on.
func (n *Notifier) Announce(ctx context.Context, key string, p Payload) error {
	p.V = 1
	js, err := json.Marshal(p)
	if err != nil {
		return err
	}
	devices, err := n.store.All(ctx)
	if err != nil {
		return err
	}
	sent, err := n.sentTo(ctx, key)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range devices {
		if sent[d.ID] || n.opts.UserExists != nil && !n.opts.UserExists(d.User) {
			continue
		}
		out := n.send(ctx, d, js, 24*time.Hour, webpush.UrgencyNormal, "")
		if n.opts.Observer != nil {
			n.opts.Observer.Pushed(out.result)
		}
		switch out.result {
		case ResultGone:
			if err := n.store.Drop(ctx, d.ID); err != nil {
				errs = append(errs, err)
			}
			continue
		case ResultRateLimited:
			errs = append(errs, RetryAfter{Wait: out.wait})
			continue
		case ResultFailed:
			errs = append(errs, out.err)
			continue
		case ResultRefused:
			n.opts.Logger.Warn("push refused; given up for this device", "user", d.User, "subscription", d.ID,
				"announcement", key, "err", out.err)
		default:
			n.store.touch(ctx, d.ID)
		}
		if _, err := n.db.ExecContext(context.WithoutCancel(ctx), recordSent, key, d.ID, announced,
			storage.FormatTime(n.opts.now())); err != nil {
			errs = append(errs, fmt.Errorf("push: record a push: %w", err))
		}
	}
	return errors.Join(errs...)
}

// sentTo is the devices key was pushed to already.
func (n *Notifier) sentTo(ctx context.Context, key string) (map[string]bool, error) {
	rows, err := n.db.QueryContext(ctx, selectSent, key)
	if err != nil {
		return nil, fmt.Errorf("push: read what was sent: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
