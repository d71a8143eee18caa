package gateway

import (
	"context"
	"log/slog"
	"time"
)

// retryBackoff bounds the wait after failures of a leader's loop.
const retryBackoff = time.Minute

// repeat runs job at once and then every interval until ctx ends; after a
// failure it runs it again sooner, backing off from a second to
// retryBackoff, and never sooner than the wait retryAfter reads from the
// error (a service's Retry-After; 0 when it names none). Each failure is
// logged as msg with attrs.
func repeat(ctx context.Context, log *slog.Logger, interval time.Duration, job func(context.Context) error,
	retryAfter func(error) time.Duration, msg string, attrs ...any) {
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := job(ctx)
		if err == nil || ctx.Err() != nil {
			failures = 0
			t.Reset(interval)
			continue
		}
		failures++
		wait := max(min(time.Second<<min(failures, 6), retryBackoff), retryAfter(err))
		log.Warn(msg, append(attrs, "retry_in", wait.String(), "err", err)...)
		t.Reset(wait)
	}
}
