package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web"
)

// The digest ([approvals] digest) covers the 24 hours before it is sent,
// and names the first digestTop of the web page's suggestions.
const (
	digestWindow  = 24 * time.Hour
	digestTop     = 3
	digestTimeout = 30 * time.Second
	// SuggestionsAnchor is the web page's Suggestions section.
	SuggestionsAnchor = "/#suggestions"
)

// Digest is the digest that would be sent at now: the window's counts,
// the top suggestions (as the web page lists them) and the link to them,
// under web.public_url as cards link (the bare path without one).
func (a *App) Digest(ctx context.Context, now time.Time) (approvals.Digest, error) {
	d := approvals.Digest{From: now.Add(-digestWindow), To: now,
		Link: strings.TrimRight(a.Config.Web.PublicURL, "/") + SuggestionsAnchor}
	var err error
	if d.DigestCounts, err = a.Service.DigestCounts(ctx, d.From, d.To); err != nil {
		return approvals.Digest{}, fmt.Errorf("digest: %w", err)
	}
	expiring, unused, err := a.GrantReview(ctx, now)
	if err != nil {
		return approvals.Digest{}, fmt.Errorf("digest: %w", err)
	}
	d.GrantsExpiring, d.MoreExpiring = digestGrants(expiring)
	d.GrantsUnused, d.MoreUnused = digestGrants(unused)
	sugs, err := a.Server.Suggest(ctx, web.SuggestWindow, web.SuggestMin)
	if err != nil {
		return approvals.Digest{}, fmt.Errorf("digest: suggestions: %w", err)
	}
	for _, s := range sugs[:min(len(sugs), digestTop)] {
		d.Suggestions = append(d.Suggestions, approvals.DigestSuggestion{Agent: s.Agent, Capability: s.Capability,
			Target: s.Target, Count: s.Count})
	}
	return d, nil
}

// digestGrants are the first approvals.DigestGrantsMax of gs as the
// digest names them, and how many more there are.
func digestGrants(gs []policy.Grant) ([]approvals.DigestGrant, int) {
	var out []approvals.DigestGrant
	for _, g := range gs[:min(len(gs), approvals.DigestGrantsMax)] {
		out = append(out, approvals.DigestGrant{ID: g.ID, Agent: g.Agent, Capability: g.Capability, Target: g.Target,
			ExpiresAt: g.ExpiresAt, LastUsedAt: g.LastUsedAt})
	}
	return out, len(gs) - len(out)
}

// SendDigest posts the digest of now to every messenger that can take one
// (an approvals.DigestSender): one message each. A messenger that fails
// does not keep the others from theirs; the errors are joined.
func (a *App) SendDigest(ctx context.Context) error {
	d, err := a.Digest(ctx, a.Server.now())
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range a.Messengers {
		ds, ok := m.(approvals.DigestSender)
		if !ok {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, digestTimeout)
		err := ds.SendDigest(sctx, d)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("digest on %s: %w", m.Name(), err))
			continue
		}
		a.log.Info("digest sent", "messenger", m.Name(), "asked", d.Asked, "suggestions", len(d.Suggestions))
	}
	return errors.Join(errs...)
}

// digestJobs is the digest's job on the leader's scheduler, when
// [approvals] digest is set.
func (a *App) digestJobs() []approvals.Job {
	if a.Config.Approvals.Digest == "" {
		return nil
	}
	return []approvals.Job{{Name: "digest", Spec: a.Config.Approvals.Digest, Run: func(ctx context.Context) {
		if err := a.SendDigest(ctx); err != nil {
			a.log.Error("digest", "err", err)
		}
	}}}
}
