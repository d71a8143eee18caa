package messenger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
)

// RateLimited is a platform's 429 as an approvals.RetryAfterError, so
// the dispatcher pauses the whole channel for as long as the platform
// asked.
type RateLimited struct {
	Messenger string        // "slack"
	Call      string        // the call that was slowed down ("chat.update")
	Wait      time.Duration // what the platform asked for
}

// Error says which call was slowed down and for how long.
func (e *RateLimited) Error() string {
	return fmt.Sprintf("%s %s: rate limited; retry after %s", e.Messenger, e.Call, e.Wait)
}

// RetryAfter is how long the platform asked us to wait.
func (e *RateLimited) RetryAfter() time.Duration { return e.Wait }

var _ approvals.RetryAfterError = (*RateLimited)(nil)

// Refusal is cards.Refusal's words for a decision from the messenger name
// that was not recorded, unescaped; what deserves it is logged.
func Refusal(log *slog.Logger, name string, err error, requestID string, l locale.Locale) string {
	text, expected := cards.Refusal(err, l)
	switch {
	case !expected:
		log.Error("decide from "+name+" failed", "request_id", requestID, "err", err)
	case errors.Is(err, approvals.ErrNotApprover):
		log.Warn("refused a decision from a non-approver", "request_id", requestID, "err", err)
	case errors.Is(err, approvals.ErrNotOffered):
		log.Warn("refused a choice the card does not offer", "request_id", requestID, "err", err)
	}
	return text
}

// PendingCards are the cards of at most n requests pending on the
// messenger name, oldest first, and whether there are more.
func PendingCards(ctx context.Context, svc *approvals.Service, name string, n int,
	card func(approvals.Request) cards.Card) ([]cards.Card, bool, error) {
	rs, err := svc.ListPendingOn(ctx, name, n+1)
	if err != nil {
		return nil, false, err
	}
	more := len(rs) > n
	if more {
		rs = rs[:n]
	}
	out := make([]cards.Card, len(rs))
	for i, r := range rs {
		out[i] = card(r)
	}
	return out, more, nil
}
