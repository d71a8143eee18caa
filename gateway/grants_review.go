package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web/push"
)

// The grant review: the grants that end soon, and those nobody used for a
// while, named by the weekly push and the digest.
const (
	reviewExpiring = 7 * 24 * time.Hour
	reviewUnused   = 30 * 24 * time.Hour
	// The weekly push is due Monday at 9:00, server.timezone (reviewDue).
	reviewDay  = time.Monday
	reviewHour = 9
	reviewMax  = 5 // grants a push names; the page lists them all
	// reviewCursor holds the due time (Unix seconds) of the last weekly
	// review pushed: the leader pushes a later one once it is due, after
	// a restart or an outage of the push services too.
	reviewCursor = "grant_review"
	reviewEvery  = time.Minute // how often the leader looks
	// GrantsAnchor is the web page's Grants section.
	GrantsAnchor = "/#grants"
)

// GrantReview lists the active grants that expire within 7 days of now
// and those not used for 30 days (since granted, when never used).
func (a *App) GrantReview(ctx context.Context, now time.Time) (expiring, unused []policy.Grant, err error) {
	list, err := a.Grants.List(ctx, policy.GrantFilter{Limit: 100000})
	if err != nil {
		return nil, nil, fmt.Errorf("grant review: %w", err)
	}
	for _, g := range list {
		if g.ExpiresAt != nil && g.ExpiresAt.Sub(now) <= reviewExpiring {
			expiring = append(expiring, g)
		}
		last := g.GrantedAt
		if g.LastUsedAt != nil {
			last = *g.LastUsedAt
		}
		if now.Sub(last) >= reviewUnused {
			unused = append(unused, g)
		}
	}
	return expiring, unused, nil
}

// reviewDue is when the weekly review last fell due at or before now:
// the latest Monday 9:00 in zone.
func reviewDue(now time.Time, zone *time.Location) time.Time {
	t := now.In(zone)
	back := (int(t.Weekday()) - int(reviewDay) + 7) % 7
	due := time.Date(t.Year(), t.Month(), t.Day()-back, reviewHour, 0, 0, 0, zone)
	if due.After(now) {
		due = due.AddDate(0, 0, -7)
	}
	return due
}

// SendGrantReview pushes the review of the week now falls in to every web
// user's devices, when there is anything to review. Each device gets a
// week's review once, however often it is called: a failed push is
// retried by calling it again.
func (a *App) SendGrantReview(ctx context.Context) error {
	now := a.Server.now()
	return a.sendGrantReview(ctx, now, "review:"+strconv.FormatInt(reviewDue(now, a.Config.Server.Zone()).Unix(), 10))
}

func (a *App) sendGrantReview(ctx context.Context, now time.Time, key string) error {
	expiring, unused, err := a.GrantReview(ctx, now)
	if err != nil || len(expiring)+len(unused) == 0 || a.Server.push == nil {
		return err
	}
	l := a.Server.page.Locale()
	var names []string
	for _, g := range append(append([]policy.Grant(nil), expiring...), unused...) {
		if len(names) == reviewMax {
			names = append(names, "…")
			break
		}
		target, _ := cards.CutIn(cards.SafeIn(g.Target, l), 60, l)
		names = append(names, fmt.Sprintf("#%d %s %s", g.ID, cards.SafeIn(g.Capability, l), target))
	}
	p := push.Payload{ID: "grants", Tag: "grants-review", Title: l.T("push.grants_title"),
		Body: l.T("push.grants_body", len(expiring), len(unused)) + "\n" + strings.Join(names, "\n"),
		URL:  GrantsAnchor, Status: "review"}
	err = a.Server.push.Notifier().Announce(ctx, key, p)
	a.log.Info("grant review pushed", "expiring", len(expiring), "unused", len(unused), "err", err)
	return err
}

// ReviewIfDue pushes the weekly review when one fell due since the last
// pushed (reviewCursor), and then moves the cursor to it; an error leaves
// the cursor, so the next call tries again (each device still gets it
// once). A gateway that never pushed one starts at the review due now,
// without pushing it.
func (a *App) ReviewIfDue(ctx context.Context) error {
	a.reviewMu.Lock()
	defer a.reviewMu.Unlock()
	now := a.Server.now()
	due := reviewDue(now, a.Config.Server.Zone()).Unix()
	at, set, err := storage.Cursor(ctx, a.DB, reviewCursor)
	switch {
	case err != nil:
		return err
	case !set:
		return ignoreMoved(storage.MoveCursor(ctx, a.DB, reviewCursor, 0, due))
	case at >= due:
		return nil
	}
	if err := a.sendGrantReview(ctx, now, "review:"+strconv.FormatInt(due, 10)); err != nil {
		return err
	}
	return ignoreMoved(storage.MoveCursor(ctx, a.DB, reviewCursor, at, due))
}

// runReview is the leader's loop of the weekly review: it looks every
// reviewEvery, sooner after a failure (backoff, a push service's
// Retry-After honoured).
func (a *App) runReview(ctx context.Context) {
	repeat(ctx, a.log, reviewEvery, a.ReviewIfDue, func(err error) time.Duration {
		var ra push.RetryAfter
		if errors.As(err, &ra) {
			return ra.Wait
		}
		return 0
	}, "grant review not pushed; will retry")
}
