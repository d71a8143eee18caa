package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	webpush "github.com/SherClockHolmes/webpush-go"
)

// The outcomes of one push, as /metrics counts them
// (gateway_push_deliveries_total{result}).
const (
	ResultSent        = "sent"         // the push service took it (2xx)
	ResultGone        = "gone"         // 404 or 410: the subscription was removed
	ResultRateLimited = "rate_limited" // 429: the whole channel waits (Retry-After)
	ResultFailed      = "failed"       // 5xx or no answer: retried with backoff
	ResultRefused     = "refused"      // another 4xx: this push is given up
)

// outcome is what one push did.
type outcome struct {
	result string
	wait   time.Duration // Retry-After of a 429
	err    error
}

// RetryAfter is a 429 from a push service: the dispatcher waits this long
// before it pushes again (approvals.RetryAfterError).
type RetryAfter struct{ Wait time.Duration }

func (e RetryAfter) Error() string {
	return fmt.Sprintf("push service: 429 Too Many Requests, retry after %s", e.Wait)
}

// RetryAfter is the pause the push service asked for.
func (e RetryAfter) RetryAfter() time.Duration { return e.Wait }

// send encrypts payload to s (aes128gcm), signs the VAPID JWT and posts
// it to s's push service. Its errors never name the endpoint (it stands
// for the device) nor any key.
func (n *Notifier) send(ctx context.Context, s Subscription, payload []byte, ttl time.Duration, urgency webpush.Urgency,
	topic string) outcome {
	res, err := webpush.SendNotificationWithContext(ctx, payload, &webpush.Subscription{Endpoint: s.Endpoint,
		Keys: webpush.Keys{Auth: s.Auth, P256dh: s.P256dh}}, &webpush.Options{
		HTTPClient: n.opts.HTTPClient, Subscriber: n.opts.Subscriber, Topic: topic,
		TTL: int(max(ttl, time.Minute) / time.Second), Urgency: urgency,
		VAPIDPublicKey: n.opts.Keys.Public, VAPIDPrivateKey: n.opts.Keys.private,
	})
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		return outcome{result: ResultFailed, err: fmt.Errorf("push service: %w", err)}
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
	switch c := res.StatusCode; {
	case c >= 200 && c < 300:
		return outcome{result: ResultSent}
	case c == http.StatusNotFound || c == http.StatusGone:
		return outcome{result: ResultGone}
	case c == http.StatusTooManyRequests:
		return outcome{result: ResultRateLimited, wait: retryAfter(res.Header.Get("Retry-After"), n.opts.now())}
	case c >= 500:
		return outcome{result: ResultFailed, err: fmt.Errorf("push service: %s", res.Status)}
	default:
		return outcome{result: ResultRefused, err: fmt.Errorf("push service: %s", res.Status)}
	}
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; a
// missing or unreadable one waits a second.
func retryAfter(h string, now time.Time) time.Duration {
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, time.Hour)
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(t.Sub(now), time.Second), time.Hour)
	}
	return time.Second
}
