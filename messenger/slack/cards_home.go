// Slack's Home tab and its lists: the pending requests and the grants an
// approver sees there and in /approvals pending|grants.

package slack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// SlackHome is what the App Home tab shows one person.
type SlackHome struct {
	// Approver: the person may decide; Admin: the person may revoke grants.
	// Someone who is neither sees only how to become one.
	Approver, Admin bool
	UserID          string
	Pending         []cards.Card
	MorePending     bool // more requests are pending than shown
	Grants          []policy.Grant
	MoreGrants      bool
	Locale          locale.Locale
}

// SlackHomeView renders the Home tab (views.publish): the pending requests
// with their buttons, then the active grants, with Revoke for admins.
func SlackHomeView(h SlackHome) slack.HomeTabViewRequest {
	l := h.Locale
	var blocks []slack.Block
	add := func(b ...slack.Block) { blocks = append(blocks, b...) }
	add(slack.NewHeaderBlock(plain(l.T("slack.home_title"))))
	if !h.Approver && !h.Admin {
		add(slack.NewSectionBlock(mrkdwn(l.T("slack.home_not_approver", EscapeMrkdwn(h.UserID))), nil, nil))
		return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
	}
	add(slack.NewHeaderBlock(plain(l.T("slack.home_pending", len(h.Pending), cards.More(h.MorePending)))))
	if len(h.Pending) == 0 {
		add(slack.NewSectionBlock(mrkdwn(l.T("slack.home_nothing_pending")), nil, nil))
	}
	for _, c := range h.Pending {
		cs := cards.NewCuts(l)
		text := cs.Cut(l.T("label.agent"), cards.OneLine(c.Title), 200) + "\n" + cs.Cut(l.T("label.target"), cards.OneLine(c.Target), 1500)
		if c.Intent != "" {
			text += "\n" + cs.Cut(l.T("label.intent"), cards.OneLine(c.Intent), 1000)
		}
		add(slack.NewSectionBlock(slackPlain(text), nil, nil))
		ctx := slackExpires(c.ExpiresAt, l) + " · " + l.T("label.request_lc") + " " + c.RequestID
		if w := c.Warnings(); len(w) > 0 {
			ctx += " · " + EscapeMrkdwn(strings.Join(w, " · "))
		}
		if cs.Any() {
			ctx += "\n" + slackCutLine(&cs, c)
		}
		add(slack.NewContextBlock("", mrkdwn(ctx)))
		if h.Approver {
			add(slack.NewActionBlock(SlackDecisionBlockID(c.RequestID), slackButtons(c)...))
		}
	}
	add(slack.NewDividerBlock(),
		slack.NewHeaderBlock(plain(l.T("slack.home_grants", len(h.Grants), cards.More(h.MoreGrants)))))
	if len(h.Grants) == 0 {
		add(slack.NewSectionBlock(mrkdwn(l.T("list.no_grants")), nil, nil))
	}
	for _, g := range h.Grants {
		var acc *slack.Accessory
		if h.Admin {
			btn := slack.NewButtonBlockElement(SlackActionRevoke, strconv.FormatInt(g.ID, 10), plain(l.T("slack.revoke"))).
				WithStyle(slack.StyleDanger).
				WithConfirm(slack.NewConfirmationBlockObject(plain(l.T("slack.confirm_revoke_title")),
					slackPlain(fitPlain(cards.OneLine(l.T("slack.confirm_revoke", g.ID, cards.SafeIn(g.Capability, l), cards.SafeIn(g.Target, l),
						cards.SafeIn(g.Channel+"/"+g.SenderID, l))), SlackMaxConfirmText)),
					plain(l.T("slack.revoke")), plain(l.T("slack.cancel"))))
			acc = slack.NewAccessory(btn)
		}
		add(slack.NewSectionBlock(mrkdwn(SlackGrantLine(g, l)), nil, acc,
			slack.SectionBlockOptionBlockID(SlackRevokeBlockID(g.ID))))
	}
	if len(blocks) > SlackMaxViewBlocks {
		blocks = append(blocks[:SlackMaxViewBlocks-1],
			slack.NewContextBlock("", mrkdwn(l.T("slack.home_more"))))
	}
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

// SlackGrantLine is one grant as the Home tab and /approvals grants list it.
func SlackGrantLine(g policy.Grant, l locale.Locale) string {
	cs := cards.NewCuts(l)
	s := fmt.Sprintf("*#%d* %s %s %s", g.ID, l.T("grants.on", codeSpan(&cs, "", cards.SafeIn(g.Capability, l), 100)),
		codeSpan(&cs, "", cards.SafeIn(g.Target, l), 1000),
		l.T("grants.for_by", codeSpan(&cs, "", cards.SafeIn(g.Channel+"/"+g.SenderID, l), 300),
			codeSpan(&cs, "", cards.SafeIn(cards.DisplayName(g.GrantedBy), l), 300)))
	if g.SessionID != "" {
		s += " · " + l.T("grants.session", codeSpan(&cs, "", cards.SafeIn(g.Agent, l), 300),
			codeSpan(&cs, "", cards.SafeIn(g.SessionID, l), 300))
	} else if g.Agent != "" {
		s += " · " + l.T("grants.agent_only", codeSpan(&cs, "", cards.SafeIn(g.Agent, l), 300))
	}
	if g.ExpiresAt != nil {
		s += " · " + l.T("grants.until", l.Date(*g.ExpiresAt))
	}
	if g.LastUsedAt != nil {
		s += " · " + l.T("grants.last_used", l.Date(*g.LastUsedAt))
	} else {
		s += " · " + l.T("grants.never_used")
	}
	return s
}

// SlackPendingText is the answer to /approvals pending (mrkdwn).
func SlackPendingText(pending []cards.Card, morePending bool, l locale.Locale) string {
	if len(pending) == 0 {
		return l.T("list.none_pending")
	}
	var b strings.Builder
	b.WriteString("*" + l.T("list.pending_title", len(pending), cards.More(morePending)) + "*")
	cs := cards.NewCuts(l)
	for _, c := range pending {
		fmt.Fprintf(&b, "\n• `%s` %s %s · %s", c.RequestID, codeSpan(&cs, "", c.Title, 120), codeSpan(&cs, "", c.Target, 300),
			slackExpires(c.ExpiresAt, l))
	}
	if cs.Any() {
		b.WriteString("\n" + EscapeMrkdwn(l.T("card.cut_list")))
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}

// SlackGrantsText is the answer to /approvals grants (mrkdwn).
func SlackGrantsText(grants []policy.Grant, moreGrants bool, l locale.Locale) string {
	if len(grants) == 0 {
		return l.T("list.no_grants")
	}
	var b strings.Builder
	b.WriteString("*" + l.T("list.grants_title", len(grants), cards.More(moreGrants)) + "*")
	for _, g := range grants {
		b.WriteString("\n• " + SlackGrantLine(g, l))
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}

// SlackAuditText is the answer to /approvals audit: the rows (oldest
// first) under a title saying what was asked, in mrkdwn, every dynamic
// string escaped, within one section.
func SlackAuditText(rows []storage.AuditEvent, scope approvals.AuditScope, l locale.Locale) string {
	what := EscapeMrkdwn(cards.AuditWhat(scope, l))
	if len(rows) == 0 {
		return l.T("audit.none", what)
	}
	var b strings.Builder
	b.WriteString("*" + l.T("audit.title", len(rows), what) + "* " + l.T("audit.oldest_first"))
	for _, e := range rows {
		fmt.Fprintf(&b, "\n• `#%d` %s — *%s* %s %s", e.Seq, EscapeMrkdwn(l.Clock(e.At)), EscapeMrkdwn(e.Event),
			l.T("audit.by"), EscapeMrkdwn(cards.AuditActor(e.Actor, l)))
		if facts := cards.AuditFactsText(e, l); facts != "" {
			b.WriteString(" · " + EscapeMrkdwn(facts))
		}
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}
