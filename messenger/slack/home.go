package slack

import (
	"context"
	"slices"
	"time"

	slackapi "github.com/slack-go/slack"
)

// watchHome remembers that user opened the Home tab, so it is refreshed
// when requests change. Bounded: the least recent opener is forgotten.
func (m *Messenger) watchHome(user string) {
	m.homeMu.Lock()
	defer m.homeMu.Unlock()
	m.homeUsers = slices.DeleteFunc(m.homeUsers, func(u string) bool { return u == user })
	m.homeUsers = append(m.homeUsers, user)
	if len(m.homeUsers) > maxHomeWatchers {
		m.homeUsers = m.homeUsers[len(m.homeUsers)-maxHomeWatchers:]
	}
}

// homesChanged republishes every watched Home tab (after a revoke, which
// the request events do not announce).
func (m *Messenger) homesChanged() {
	m.homeMu.Lock()
	users := slices.Clone(m.homeUsers)
	m.homeMu.Unlock()
	for _, u := range users {
		if !m.approver[u] && !m.admin[u] {
			continue // their tab says how to become an approver; nothing to refresh
		}
		m.goJob(func(ctx context.Context) { m.publishHome(ctx, u) })
	}
}

// publishHome renders and publishes user's Home tab
// (https://docs.slack.dev/reference/methods/views.publish). Approvers see
// the pending requests with buttons; admins also get Revoke on grants;
// anyone else learns how to become an approver.
func (m *Messenger) publishHome(ctx context.Context, user string) {
	h := SlackHome{UserID: user, Approver: m.approver[user], Admin: m.admin[user], Locale: m.loc}
	if h.Approver || h.Admin {
		var err error
		if h.Pending, h.MorePending, err = m.pendingCards(ctx, maxListed); err == nil {
			h.Grants, h.MoreGrants, err = m.activeGrants(ctx, "", maxHomeGrants)
		}
		if err != nil {
			m.log.Error("home tab: read the database", "user_id", user, "err", err)
			return
		}
	}
	_, err := m.api.PublishViewContext(ctx, slackapi.PublishViewContextRequest{UserID: user, View: SlackHomeView(h)})
	if err != nil {
		m.log.Warn("home tab: views.publish failed", "user_id", user, "err", err)
	}
}

// refreshHomes republishes the watched Home tabs shortly after requests
// change (best effort: a burst of changes makes one refresh).
func (m *Messenger) refreshHomes(ctx context.Context) {
	for ctx.Err() == nil {
		events := m.svc.Subscribe(ctx, "")
		var due <-chan time.Time
		var timer *time.Timer
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case _, ok := <-events:
				if !ok {
					break loop // dropped for falling behind: subscribe again
				}
				if timer == nil {
					timer = time.NewTimer(homeDebounce)
					due = timer.C
				}
			case <-due:
				timer, due = nil, nil
				m.homesChanged()
			}
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() == nil {
			m.homesChanged() // whatever was missed while resubscribing
		}
	}
}
