package slack

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// handleCommand answers one verified, first-time slash command privately:
// listings for approvers and admins, revoke for admins, help for anyone.
func (m *Messenger) handleCommand(ctx context.Context, c slackapi.SlashCommand) {
	if !m.ourTeam(ctx, c.TeamID) {
		return
	}
	to := replyTo{channel: c.ChannelID, user: c.UserID, responseURL: c.ResponseURL, preferResponseURL: true}
	args := strings.Fields(c.Text)
	sub := ""
	if len(args) > 0 {
		sub = strings.ToLower(args[0])
		args = args[1:]
	}
	canList := m.approver[c.UserID] || m.admin[c.UserID]
	switch sub {
	case "", "help":
		m.reply(ctx, to, m.loc.T("slack.help"))
	case "pending":
		if !canList {
			m.reply(ctx, to, m.loc.T("slack.not_approver"))
			return
		}
		pending, more, err := m.pendingCards(ctx, maxListed)
		if err != nil {
			m.log.Error("list pending for slack", "err", err)
			m.reply(ctx, to, m.loc.T("msg.internal"))
			return
		}
		m.reply(ctx, to, SlackPendingText(pending, more, m.loc))
	case "grants":
		if !canList {
			m.reply(ctx, to, m.loc.T("slack.not_approver"))
			return
		}
		if len(args) > 1 {
			m.reply(ctx, to, m.loc.T("slack.grants_usage"))
			return
		}
		sender := ""
		if len(args) == 1 {
			sender = args[0]
		}
		gs, more, err := m.activeGrants(ctx, sender, maxListed)
		if err != nil {
			m.log.Error("list grants for slack", "err", err)
			m.reply(ctx, to, m.loc.T("msg.internal"))
			return
		}
		m.reply(ctx, to, SlackGrantsText(gs, more, m.loc))
	case "revoke":
		id, err := strconv.ParseInt(strings.TrimPrefix(strings.Join(args, ""), "#"), 10, 64)
		if len(args) != 1 || err != nil || id <= 0 {
			m.reply(ctx, to, m.loc.T("slack.revoke_usage"))
			return
		}
		m.revoke(ctx, c.UserID, c.UserName, id, func(text string) { m.reply(ctx, to, text) })
	case "rules":
		m.rulesCommand(ctx, c, args, func(text string) { m.reply(ctx, to, text) })
	case "audit":
		if !m.admin[c.UserID] {
			m.log.Warn("refused /approvals audit from a non-admin", "user_id", c.UserID)
			m.reply(ctx, to, m.loc.T("slack.not_admin_audit"))
			return
		}
		if len(args) > 1 {
			m.reply(ctx, to, m.loc.T("slack.audit_usage"))
			return
		}
		arg := strings.Join(args, "")
		var rows []storage.AuditEvent
		var scope approvals.AuditScope
		var err error
		if id, who, ok := mention(arg); ok {
			rows, scope, err = m.svc.AuditPerson(ctx, id, who, cards.MaxAuditListed)
		} else {
			rows, scope, err = m.svc.AuditLookup(ctx, arg, cards.MaxAuditListed)
		}
		if err != nil {
			m.log.Error("audit for slack", "err", err)
			m.reply(ctx, to, m.loc.T("msg.internal"))
			return
		}
		m.reply(ctx, to, SlackAuditText(rows, scope, m.loc))
	default:
		m.reply(ctx, to, m.loc.T("slack.unknown_subcommand", EscapeMrkdwn(sub))+"\n"+m.loc.T("slack.help"))
	}
}

// rulesCommand is /approvals rules [rm ID], for slack.admins: the rules in
// evaluation order with their source, and removing a run-time one.
func (m *Messenger) rulesCommand(ctx context.Context, c slackapi.SlashCommand, args []string, answer func(string)) {
	if !m.admin[c.UserID] {
		m.log.Warn("refused /approvals rules from a non-admin", "user_id", c.UserID)
		answer(m.loc.T("slack.not_admin_rules"))
		return
	}
	if m.opts.Rules == nil {
		answer(m.loc.T("msg.no_rule_store"))
		return
	}
	switch {
	case len(args) == 0:
		list, err := m.opts.Rules.List(ctx)
		if err != nil {
			m.log.Error("list rules for slack", "err", err)
			answer(m.loc.T("msg.internal"))
			return
		}
		answer(SlackRulesText(list, m.loc))
	case len(args) == 2 && (args[0] == "rm" || args[0] == "remove"):
		id := args[1]
		by := approvals.Actor{Channel: Name, ID: c.UserID, Name: c.UserName}.String()
		err := m.opts.Rules.Remove(ctx, id, by)
		switch {
		case err == nil:
			m.log.Info("rule removed in slack", "rule_id", id, "user_id", c.UserID)
			answer(m.loc.T("msg.rule_removed", EscapeMrkdwn(id)))
		case errors.Is(err, policy.ErrRuleFromConfig):
			answer(m.loc.T("msg.rule_from_config", EscapeMrkdwn(id)))
		case errors.Is(err, policy.ErrNotFound), errors.Is(err, policy.ErrInvalid):
			answer(m.loc.T("msg.rule_not_found", EscapeMrkdwn(id)))
		default:
			m.log.Error("remove rule from slack failed", "rule_id", id, "err", err)
			answer(m.loc.T("msg.internal"))
		}
	default:
		answer(m.loc.T("slack.rules_usage"))
	}
}

// mentionRE is how Slack writes a user in a slash command's text:
// <@U0123|roberto> (or <@U0123>).
var mentionRE = regexp.MustCompile(`^<@([A-Z0-9]+)(?:\|([^>]*))?>$`)

// mention reads a Slack mention: the member id, and the name to show (the
// id when the mention has no name).
func mention(s string) (id, who string, ok bool) {
	m := mentionRE.FindStringSubmatch(s)
	if m == nil {
		return "", "", false
	}
	who = m[1]
	if m[2] != "" {
		who = m[2]
	}
	return m[1], who, true
}
