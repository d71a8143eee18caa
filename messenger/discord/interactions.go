package discord

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger"
)

// reply is an interaction's immediate answer (Discord wants one within
// 3 s: the HTTP answer, or the callback in gateway mode) and the work to
// do once it is sent.
type reply struct {
	resp  *discordgo.InteractionResponse
	after func(ctx context.Context)
}

// ephemeral answers the person who tapped or typed, and nobody else.
func ephemeral(text string) reply {
	return reply{resp: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: DiscordText(text), Flags: discordgo.MessageFlagsEphemeral,
			AllowedMentions: noMentions()}}}
}

// deferred acknowledges a tap without changing the message; after runs
// next and may follow up privately.
func deferred(after func(ctx context.Context)) reply {
	return reply{resp: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate,
		Data: &discordgo.InteractionResponseData{AllowedMentions: noMentions()}}, after: after}
}

// t is a catalog text escaped for Discord.
func (m *Messenger) t(key string, args ...any) string {
	return EscapeDiscord(m.loc.T(key, args...))
}

// handle reads one interaction: untrusted input even when signed, since
// anyone in the guild can tap and anyone with a client can craft one.
// Nothing is decided before the interaction is known to be new, from the
// configured guild (and, for taps, the cards' channel) and about a card
// the tap was really made on.
func (m *Messenger) handle(ctx context.Context, i *discordgo.Interaction) reply {
	if i.Type == discordgo.InteractionPing {
		return reply{resp: &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong}}
	}
	if i.Type != discordgo.InteractionMessageComponent && i.Type != discordgo.InteractionApplicationCommand {
		m.log.Warn("ignored an unexpected Discord interaction", "type", int(i.Type))
		return ephemeral(m.t("msg.not_ours"))
	}
	if i.ID == "" || !m.replays.FirstTime(ctx, i.ID) {
		m.log.Warn("refused a replayed Discord interaction", "interaction_id", i.ID)
		return ephemeral(m.t("discord.replayed"))
	}
	if i.Member == nil || i.Member.User == nil || i.GuildID != m.cfg.GuildID ||
		(i.Type == discordgo.InteractionMessageComponent && i.ChannelID != m.cfg.ChannelID) {
		m.log.Warn("refused a Discord interaction from elsewhere than the cards' guild and channel",
			"guild_id", i.GuildID, "chat_id", i.ChannelID, "dm", i.Member == nil)
		return ephemeral(m.t("discord.wrong_place"))
	}
	m.roles.put(i.Member.User.ID, i.Member.Roles)
	if i.Type == discordgo.InteractionApplicationCommand {
		return m.command(i)
	}
	return m.tap(ctx, i)
}

// actor is who made an interaction: an outsider unless in discord.approvers.
func (m *Messenger) actor(i *discordgo.Interaction) approvals.Actor {
	u := i.Member.User
	return approvals.Actor{Channel: Name, ID: u.ID, Name: u.Username, Outsider: !m.approver[u.ID]}
}

// tap is a button press on a card.
func (m *Messenger) tap(ctx context.Context, i *discordgo.Interaction) reply {
	data := i.MessageComponentData()
	cb, err := cards.Decode(data.CustomID)
	if err != nil || cb.Revoke() || i.Message == nil {
		m.log.Warn("refused an unexpected Discord button", "user_id", i.Member.User.ID, "err", err)
		return ephemeral(m.t("msg.not_ours"))
	}
	// The custom_id names a request; the message tapped must be that
	// request's card, or the id was edited or carried over from another.
	ref, err := m.postedCardRef(ctx, cb.RequestID)
	if err != nil && !errors.Is(err, approvals.ErrNotFound) {
		m.log.Error("card ref lookup failed", "request_id", cb.RequestID, "err", err)
		return ephemeral(m.t("msg.internal"))
	}
	if ref != m.cfg.ChannelID+":"+i.Message.ID {
		m.log.Warn("refused a tap whose custom_id names another message's request", "user_id", i.Member.User.ID,
			"request_id", cb.RequestID, "message_id", i.Message.ID)
		return ephemeral(m.t("discord.not_this_card"))
	}
	actor := m.actor(i)
	if cb.Menu || cb.Back {
		return m.scopeMenu(ctx, cb, actor)
	}
	return deferred(func(ctx context.Context) {
		if text := m.decide(ctx, cb, actor); text != "" {
			m.followUp(ctx, i, text)
		}
	})
}

// scopeMenu shows Allow always's scopes on the card (Menu) or its own
// buttons again (Back). It decides nothing; only someone who may decide
// the request may change what the card shows.
func (m *Messenger) scopeMenu(ctx context.Context, cb cards.Callback, actor approvals.Actor) reply {
	r, err := m.svc.Get(ctx, cb.RequestID)
	if err != nil {
		return ephemeral(m.decideRefusal(err, cb.RequestID))
	}
	if r.Status.Finished() {
		return ephemeral(m.decideRefusal(&approvals.AlreadyDecidedError{Request: r}, r.ID))
	}
	if !m.mayDecide(r, actor) {
		return ephemeral(m.decideRefusal(approvals.ErrOutsider, r.ID))
	}
	msg := Discord(m.card(r))
	if cb.Menu && cb.EveryAgent {
		msg = DiscordEveryScopes(m.card(r))
	} else if cb.Menu {
		msg = DiscordScopes(m.card(r))
	}
	return reply{resp: &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: msg.Content, Components: msg.Components, AllowedMentions: noMentions()}}}
}

// mayDecide is a cheap first look at whether actor is among r's deciders
// (the service checks for real when a decision comes).
func (m *Messenger) mayDecide(r approvals.Request, actor approvals.Actor) bool {
	if len(r.Approvers) == 0 {
		return !actor.Outsider
	}
	if slices.Contains(r.Approvers, actor.Identity()) {
		return true
	}
	roles, _ := m.roles.get(actor.ID)
	for _, role := range roles {
		if slices.Contains(r.Approvers, Name+":role:"+role) {
			return true
		}
	}
	return false
}

// decide acts on a decision tap and returns what to tell the person
// privately ("" when the card's edit says it all).
func (m *Messenger) decide(ctx context.Context, cb cards.Callback, actor approvals.Actor) string {
	ch := approvals.Choice{Decision: cb.Decision, Duration: cb.For, EveryAgent: cb.EveryAgent}
	if cb.Scope > 0 {
		cur, err := m.svc.Get(ctx, cb.RequestID)
		if err == nil {
			ch, err = approvals.ChoiceOfScope(cur, ch, strconv.Itoa(cb.Scope-1))
		}
		if err != nil {
			return m.decideRefusal(err, cb.RequestID)
		}
	}
	r, err := m.svc.DecideChoice(ctx, cb.RequestID, ch, actor)
	if err != nil {
		return m.decideRefusal(err, cb.RequestID)
	}
	if !r.Status.Finished() {
		m.log.Info("approval counted in discord", "request_id", r.ID, "decision", string(cb.Decision), "user_id", actor.ID)
		return m.t("msg.counted", cards.Progress(r, m.loc))
	}
	m.log.Info("decided in discord", "request_id", r.ID, "decision", string(cb.Decision), "user_id", actor.ID)
	return ""
}

// decideRefusal renders cards.Refusal's words for a decision that was
// not recorded, and logs what deserves it.
func (m *Messenger) decideRefusal(err error, id string) string {
	return EscapeDiscord(messenger.Refusal(m.log, Name, err, id, m.loc))
}

// followUp tells the person who made i something privately, after the
// interaction was acknowledged (https://discord.com/developers/docs/interactions/receiving-and-responding#create-followup-message).
// Best effort: a failure is logged.
func (m *Messenger) followUp(ctx context.Context, i *discordgo.Interaction, text string) {
	_, err := m.api.FollowupMessageCreate(i, false, &discordgo.WebhookParams{Content: DiscordText(text),
		Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
	if err != nil {
		m.log.Warn("could not answer privately", "user_id", i.Member.User.ID, "err", err)
	}
}

// cardRefWait bounds how long a tap waits for its card's post to be
// recorded: well inside the 3 s Discord gives an interaction's answer.
const cardRefWait = 2 * time.Second

// postedCardRef is the message a request's card was posted as. Discord
// shows a message before the post's answer reaches us and is recorded, so
// a tap can come first: a card with no reference yet is waited for, a
// little, before the tap is refused.
func (m *Messenger) postedCardRef(ctx context.Context, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cardRefWait)
	defer cancel()
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		ref, err := m.svc.CardRef(ctx, id, Name)
		if ctx.Err() != nil {
			return "", approvals.ErrNotFound
		}
		if !errors.Is(err, approvals.ErrNotFound) {
			return ref, err
		}
		select {
		case <-ctx.Done():
			return "", approvals.ErrNotFound
		case <-time.After(delay):
		}
	}
}
