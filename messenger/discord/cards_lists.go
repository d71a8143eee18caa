package discord

import (
	"fmt"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The answers to Discord's /approvals: one line per item, every dynamic
// string in a code span or escaped, cut after the last whole line that
// fits a message (DiscordText).

// DiscordPendingText is the answer to /approvals pending.
func DiscordPendingText(pending []cards.Card, morePending bool, l locale.Locale) string {
	if len(pending) == 0 {
		return EscapeDiscord(l.T("list.none_pending"))
	}
	var b strings.Builder
	b.WriteString("**" + EscapeDiscord(l.T("list.pending_title", len(pending), cards.More(morePending))) + "**")
	for _, c := range pending {
		title, _ := cards.CutIn(c.Title, 120, l)
		target, _ := cards.CutIn(c.Target, 300, l)
		fmt.Fprintf(&b, "\n• %s %s %s · %s", discordCode(c.RequestID), discordCode(title), discordCode(target),
			EscapeDiscord(l.Expires(c.ExpiresAt)))
	}
	return DiscordText(b.String())
}

// DiscordGrantLine is one grant as /approvals grants lists it.
func DiscordGrantLine(g policy.Grant, l locale.Locale) string {
	show := func(s string, n int) string {
		out, _ := cards.CutIn(cards.SafeIn(s, l), n, l)
		return discordCode(out)
	}
	s := fmt.Sprintf("**\\#%d** %s %s %s", g.ID, discordT(l, "grants.on", show(g.Capability, 100)), show(g.Target, 500),
		discordT(l, "grants.for_by", show(g.Channel+"/"+g.SenderID, 200), show(cards.DisplayName(g.GrantedBy), 200)))
	if g.SessionID != "" {
		s += " · " + discordT(l, "grants.session", show(g.Agent, 200), show(g.SessionID, 200))
	} else if g.Agent != "" {
		s += " · " + discordT(l, "grants.agent_only", show(g.Agent, 200))
	}
	if g.ExpiresAt != nil {
		s += " · " + EscapeDiscord(l.T("grants.until", l.Date(*g.ExpiresAt)))
	}
	if g.LastUsedAt != nil {
		s += " · " + EscapeDiscord(l.T("grants.last_used", l.Date(*g.LastUsedAt)))
	} else {
		s += " · " + EscapeDiscord(l.T("grants.never_used"))
	}
	return s
}

// DiscordGrantsText is the answer to /approvals grants.
func DiscordGrantsText(grants []policy.Grant, moreGrants bool, l locale.Locale) string {
	if len(grants) == 0 {
		return EscapeDiscord(l.T("list.no_grants"))
	}
	var b strings.Builder
	b.WriteString("**" + EscapeDiscord(l.T("list.grants_title", len(grants), cards.More(moreGrants))) + "**")
	for _, g := range grants {
		b.WriteString("\n• " + DiscordGrantLine(g, l))
	}
	return DiscordText(b.String())
}

// DiscordAuditText is the answer to /approvals audit: the rows, oldest
// first, under a title saying what was asked.
func DiscordAuditText(rows []storage.AuditEvent, scope approvals.AuditScope, l locale.Locale) string {
	what := cards.AuditWhat(scope, l)
	if len(rows) == 0 {
		return EscapeDiscord(l.T("audit.none", what))
	}
	var b strings.Builder
	b.WriteString("**" + EscapeDiscord(l.T("audit.title", len(rows), what)) + "** " + EscapeDiscord(l.T("audit.oldest_first")))
	for _, e := range rows {
		fmt.Fprintf(&b, "\n• \\#%d %s — **%s** %s %s", e.Seq, EscapeDiscord(l.Clock(e.At)), EscapeDiscord(e.Event),
			EscapeDiscord(l.T("audit.by")), discordCode(cards.AuditActor(e.Actor, l)))
		if facts := cards.AuditFactsText(e, l); facts != "" {
			b.WriteString(" · " + discordCode(facts))
		}
	}
	return DiscordText(b.String())
}

// DiscordRulesText is the answer to /approvals rules: every rule, org
// first then user, each owner in evaluation order, with its id and source.
func DiscordRulesText(rules []policy.RuleInfo, l locale.Locale) string {
	if len(rules) == 0 {
		return EscapeDiscord(l.T("rules.none"))
	}
	var b strings.Builder
	b.WriteString(EscapeDiscord(l.T("rules.title", len(rules))))
	owner := ""
	for _, r := range rules {
		if r.Owner != owner {
			owner = r.Owner
			key := "rules.user"
			if owner == "org" {
				key = "rules.org"
			}
			b.WriteString("\n*" + EscapeDiscord(l.T(key)) + "*")
		}
		target, _ := cards.CutIn(cards.SafeIn(r.Target, l), 500, l)
		fmt.Fprintf(&b, "\n• %d %s %s %s · %s", r.Position, EscapeDiscord(string(r.Action)), discordCode(r.Capability),
			discordCode(target), discordCode(r.ID))
		for _, kv := range [][2]string{{l.T("rules.agent"), r.Agent}, {l.T("rules.channel"), r.Channel}, {l.T("rules.sender"), r.SenderID}} {
			if kv[1] != "" {
				b.WriteString(" · " + EscapeDiscord(kv[0]) + " " + discordCode(cards.SafeIn(kv[1], l)))
			}
		}
		if r.Source == policy.SourceConfig {
			b.WriteString(" " + EscapeDiscord(l.T("rules.from_config")))
		} else {
			b.WriteString(" " + discordT(l, "rules.by", discordCode(cards.SafeIn(r.CreatedBy, l))))
		}
	}
	return DiscordText(b.String())
}

// discordT is the catalog's text for key with its words escaped and args,
// already rendered for Discord (code spans), put in as they are.
func discordT(l locale.Locale, key string, args ...string) string {
	marks := make([]any, len(args))
	for i := range args {
		marks[i] = fmt.Sprintf("\x00%d\x00", i)
	}
	s := EscapeDiscord(l.T(key, marks...))
	for i, a := range args {
		s = strings.Replace(s, fmt.Sprintf("\x00%d\x00", i), a, 1)
	}
	return s
}
