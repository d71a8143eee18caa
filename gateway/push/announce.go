package push

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// Announce pushes a notice that is no request (the weekly review of
// grants) to every device of every web user: no action, no token. It is
// sent once, not queued: a device that fails misses this one (counted);
// one the push service says is gone is removed.
func (n *Notifier) Announce(ctx context.Context, p Payload) error {
	p.V = 1
	js, err := json.Marshal(p)
	if err != nil {
		return err
	}
	devices, err := n.store.All(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range devices {
		out := n.send(ctx, d, js, 24*time.Hour, webpush.UrgencyNormal, "")
		if n.opts.Observer != nil {
			n.opts.Observer.Pushed(out.result)
		}
		switch out.result {
		case ResultSent:
			n.store.touch(ctx, d.ID)
		case ResultGone:
			if err := n.store.Drop(ctx, d.ID); err != nil {
				errs = append(errs, err)
			}
		case ResultRateLimited:
			errs = append(errs, RetryAfter{Wait: out.wait})
		default:
			errs = append(errs, out.err)
		}
	}
	return errors.Join(errs...)
}
