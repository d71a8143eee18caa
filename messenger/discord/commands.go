package discord

import (
	"context"
	"errors"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/policy"
)

// commands is /approvals, registered in discord.guild_id at start
// (https://discord.com/developers/docs/interactions/application-commands#bulk-overwrite-guild-application-commands):
// a guild command is there at once, and only there.
func commands() []*discordgo.ApplicationCommand {
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name,
			Description: desc, Options: opts}
	}
	return []*discordgo.ApplicationCommand{{
		Name: "approvals", Description: "The approval gateway", Type: discordgo.ChatApplicationCommand,
		Options: []*discordgo.ApplicationCommandOption{
			sub("pending", "Requests waiting for a decision"),
			sub("grants", "Active grants", &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString,
				Name: "sender", Description: "Only this sender's grants"}),
			sub("revoke", "Revoke a grant (admins)", &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionInteger,
				Name: "id", Description: "The grant's number, as /approvals grants lists it", Required: true, MinValue: ptr(1.0)}),
			sub("audit", "The last audit rows (admins)", &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString,
				Name: "of", Description: "A request id, an agent, or @person"}),
			sub("rules", "The policy rules (admins)", &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString,
				Name: "remove", Description: "Remove this run-time rule (an api:N id)"}),
		},
	}}
}

func ptr[T any](v T) *T { return &v }

// registerCommands puts /approvals in the guild. Best effort: a failure is
// logged (cards work without it).
func (m *Messenger) registerCommands(ctx context.Context) {
	if _, err := m.api.ApplicationCommandBulkOverwrite(m.cfg.ApplicationID, m.cfg.GuildID, commands(),
		discordgo.WithContext(ctx)); err != nil {
		if ctx.Err() == nil {
			m.log.Error("could not register /approvals in the guild; check discord.application_id and the bot's applications.commands scope",
				"err", err)
		}
		return
	}
	m.log.Debug("registered /approvals", "guild_id", m.cfg.GuildID)
}

// command answers /approvals: deferred and private at once, then the
// answer in place of the "thinking" message.
func (m *Messenger) command(i *discordgo.Interaction) reply {
	data := i.ApplicationCommandData()
	if data.Name != "approvals" || len(data.Options) != 1 {
		return ephemeral(m.t("discord.help"))
	}
	sub := data.Options[0]
	opts := map[string]*discordgo.ApplicationCommandInteractionDataOption{}
	for _, o := range sub.Options {
		opts[o.Name] = o
	}
	str := func(name string) string {
		if o := opts[name]; o != nil && o.Type == discordgo.ApplicationCommandOptionString {
			return strings.TrimSpace(o.StringValue())
		}
		return ""
	}
	actor := m.actor(i)
	run := func(ctx context.Context) string {
		switch sub.Name {
		case "pending":
			return m.pendingText(ctx, actor)
		case "grants":
			return m.grantsText(ctx, actor, str("sender"))
		case "revoke":
			o := opts["id"]
			if o == nil || o.Type != discordgo.ApplicationCommandOptionInteger || o.IntValue() <= 0 {
				return m.t("discord.help")
			}
			return m.revoke(ctx, actor, o.IntValue())
		case "audit":
			return m.auditText(ctx, actor, str("of"))
		case "rules":
			return m.rules(ctx, actor, str("remove"))
		}
		return m.t("discord.help")
	}
	return reply{
		resp: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()}},
		after: func(ctx context.Context) {
			text := DiscordText(run(ctx))
			if _, err := m.api.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()},
				discordgo.WithContext(ctx)); err != nil {
				m.log.Warn("could not answer /approvals", "user_id", actor.ID, "err", err)
			}
		},
	}
}

func (m *Messenger) canList(a approvals.Actor) bool { return m.approver[a.ID] || m.admin[a.ID] }

func (m *Messenger) pendingText(ctx context.Context, a approvals.Actor) string {
	if !m.canList(a) {
		return m.t("discord.not_approver")
	}
	out, more, err := messenger.PendingCards(ctx, m.svc, Name, maxListed, m.card)
	if err != nil {
		m.log.Error("list pending for discord", "err", err)
		return m.t("msg.internal")
	}
	return DiscordPendingText(out, more, m.loc)
}

func (m *Messenger) grantsText(ctx context.Context, a approvals.Actor, sender string) string {
	if !m.canList(a) {
		return m.t("discord.not_approver")
	}
	gs, err := m.svc.Grants().List(ctx, policy.GrantFilter{SenderID: sender, Limit: maxListed + 1})
	if err != nil {
		m.log.Error("list grants for discord", "err", err)
		return m.t("msg.internal")
	}
	more := len(gs) > maxListed
	if more {
		gs = gs[:maxListed]
	}
	return DiscordGrantsText(gs, more, m.loc)
}

// revoke is /approvals revoke: discord.admins only.
func (m *Messenger) revoke(ctx context.Context, a approvals.Actor, id int64) string {
	if !m.admin[a.ID] {
		m.log.Warn("refused a revoke from a non-admin", "user_id", a.ID, "grant_id", id)
		return m.t("discord.not_admin")
	}
	a.Outsider = false
	changed, err := m.svc.RevokeGrant(ctx, id, a)
	switch {
	case errors.Is(err, approvals.ErrPolicyStepUp):
		m.log.Warn("refused a revoke: policy_step_up is on", "grant_id", id, "user_id", a.ID)
		text, _ := cards.Refusal(err, m.loc)
		return EscapeDiscord(text)
	case err != nil:
		m.log.Error("revoke from discord failed", "grant_id", id, "err", err)
		return m.t("msg.internal")
	case changed:
		m.log.Info("grant revoked in discord", "grant_id", id, "user_id", a.ID)
		return m.t("msg.revoked", id)
	}
	return m.t("msg.revoke_inactive", id)
}

// auditText is /approvals audit: discord.admins only.
func (m *Messenger) auditText(ctx context.Context, a approvals.Actor, of string) string {
	if !m.admin[a.ID] {
		m.log.Warn("refused /approvals audit from a non-admin", "user_id", a.ID)
		return m.t("discord.not_admin")
	}
	rows, scope, err := m.svc.AuditLookup(ctx, of, cards.MaxAuditListed)
	if err != nil {
		m.log.Error("audit for discord", "err", err)
		return m.t("msg.internal")
	}
	return DiscordAuditText(rows, scope, m.loc)
}

// rules is /approvals rules [remove ID]: discord.admins only.
func (m *Messenger) rules(ctx context.Context, a approvals.Actor, remove string) string {
	if !m.admin[a.ID] {
		m.log.Warn("refused /approvals rules from a non-admin", "user_id", a.ID)
		return m.t("discord.not_admin")
	}
	if m.opts.Rules == nil {
		return m.t("msg.no_rule_store")
	}
	if remove == "" {
		list, err := m.opts.Rules.List(ctx)
		if err != nil {
			m.log.Error("list rules for discord", "err", err)
			return m.t("msg.internal")
		}
		return DiscordRulesText(list, m.loc)
	}
	err := m.opts.Rules.Remove(ctx, remove, a.String())
	switch {
	case err == nil:
		m.log.Info("rule removed in discord", "rule_id", remove, "user_id", a.ID)
		return m.t("msg.rule_removed", remove)
	case errors.Is(err, policy.ErrRuleFromConfig):
		return m.t("msg.rule_from_config", remove)
	case errors.Is(err, policy.ErrNotFound), errors.Is(err, policy.ErrInvalid):
		return m.t("msg.rule_not_found", remove)
	}
	m.log.Error("remove rule from discord failed", "rule_id", remove, "err", err)
	return m.t("msg.internal")
}
