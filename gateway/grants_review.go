package gateway

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/gateway/push"
	"github.com/metnos/gateway/policy"
)

// The grant review: the grants that end soon, and those nobody used for a
// while, named by the weekly push and the digest.
const (
	reviewExpiring = 7 * 24 * time.Hour
	reviewUnused   = 30 * 24 * time.Hour
	// reviewSpec is the weekly push: Monday at 9:00, server.timezone.
	reviewSpec = "0 9 * * 1"
	reviewMax  = 5 // grants a push names; the page lists them all
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

// SendGrantReview pushes the week's review to every web user's devices,
// when there is anything to review.
func (a *App) SendGrantReview(ctx context.Context) error {
	expiring, unused, err := a.GrantReview(ctx, a.Server.now())
	if err != nil || len(expiring)+len(unused) == 0 || a.Server.push == nil {
		return err
	}
	l := a.Server.web.loc
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
	err = a.Server.push.notifier.Announce(ctx, p)
	a.log.Info("grant review pushed", "expiring", len(expiring), "unused", len(unused), "err", err)
	return err
}

// reviewJob is the weekly push of the grant review, on the leader's
// scheduler.
func (a *App) reviewJob() approvals.Job {
	return approvals.Job{Name: "grant review", Spec: reviewSpec, Run: func(ctx context.Context) {
		if err := a.SendGrantReview(ctx); err != nil {
			a.log.Error("grant review", "err", err)
		}
	}}
}
