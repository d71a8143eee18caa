package slack

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/cards"
)

// commandHelp is the answer to /approvals help (and to anything unknown).
const commandHelp = "*/approvals* — the approval gateway\n" +
	"• `/approvals pending` — requests waiting for a decision\n" +
	"• `/approvals grants [sender]` — active grants, optionally of one sender\n" +
	"• `/approvals revoke ID` — revoke a grant (slack.admins only)\n" +
	"• `/approvals help` — this text\n" +
	"Cards with Allow once / Allow always / Deny arrive in the approvals channel; the Home tab lists both."

// handleCommand answers one verified, first-time slash command privately:
// listings for approvers and admins, revoke for admins, help for anyone.
func (m *Messenger) handleCommand(ctx context.Context, c slackapi.SlashCommand) {
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
		m.reply(ctx, to, commandHelp)
	case "pending":
		if !canList {
			m.reply(ctx, to, msgNotApprover)
			return
		}
		pending, more, err := m.pendingCards(ctx, maxListed)
		if err != nil {
			m.log.Error("list pending for slack", "err", err)
			m.reply(ctx, to, msgInternal)
			return
		}
		m.reply(ctx, to, cards.SlackPendingText(pending, more, m.loc))
	case "grants":
		if !canList {
			m.reply(ctx, to, msgNotApprover)
			return
		}
		if len(args) > 1 {
			m.reply(ctx, to, "Usage: `/approvals grants [sender]`")
			return
		}
		sender := ""
		if len(args) == 1 {
			sender = args[0]
		}
		gs, more, err := m.activeGrants(ctx, sender, maxListed)
		if err != nil {
			m.log.Error("list grants for slack", "err", err)
			m.reply(ctx, to, msgInternal)
			return
		}
		m.reply(ctx, to, cards.SlackGrantsText(gs, more, m.loc))
	case "revoke":
		id, err := strconv.ParseInt(strings.TrimPrefix(strings.Join(args, ""), "#"), 10, 64)
		if len(args) != 1 || err != nil || id <= 0 {
			m.reply(ctx, to, "Usage: `/approvals revoke ID` (the grant number, as `/approvals grants` lists it)")
			return
		}
		m.revoke(ctx, c.UserID, c.UserName, id, func(text string) { m.reply(ctx, to, text) })
	default:
		m.reply(ctx, to, fmt.Sprintf("Unknown subcommand `%s`.\n%s", cards.EscapeMrkdwn(sub), commandHelp))
	}
}
