package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// What people read. NotApprover is also what tests look for.
const (
	// NotApprover answers anyone outside telegram.approvers who taps a
	// button, uses an approver command or replies to a card.
	NotApprover = "You are not an approver for this gateway"
	badButton   = "This button is not valid (it is not one of this gateway's)."
	tryAgain    = "Something went wrong; nothing changed. Please try again."
)

// actor is who tapped, for decided_by and granted_by: the numeric id
// (stable) and a name to read.
func actor(u *tgbotapi.User) approvals.Actor {
	name := strings.TrimSpace(u.FirstName)
	if name == "" {
		name = u.UserName
	}
	return approvals.Actor{Channel: Name, ID: strconv.FormatInt(u.ID, 10), Name: name}
}

// onCallback handles a tap on an inline button. The callback data is
// untrusted (any client can send any data for any message): it is decoded
// strictly, the person must be an approver, and the decision is the
// service's, which refuses what the card did not offer. Every path ends in
// exactly one answer.
func (b *Bot) onCallback(ctx context.Context, q *tgbotapi.CallbackQuery) {
	log := b.log.With("callback_query_id", q.ID)
	if q.From != nil {
		log = log.With("user_id", q.From.ID)
	}
	cb, err := cards.Decode(q.Data)
	if err != nil {
		log.Warn("refused a tap with foreign callback data", "err", err)
		b.answer(ctx, q.ID, badButton, true)
		return
	}
	if !b.isApprover(q.From) {
		log.Warn("refused a tap from a non-approver", "request_id", cb.RequestID, "grant_id", cb.GrantID)
		b.answer(ctx, q.ID, NotApprover, true)
		return
	}
	by := actor(q.From)
	if cb.Revoke() {
		b.revokeByButton(ctx, q, cb.GrantID, by)
		return
	}
	log = log.With("request_id", cb.RequestID, "decision", cb.Decision)
	r, err := b.svc.Decide(ctx, cb.RequestID, cb.Decision, by)
	var already *approvals.AlreadyDecidedError
	switch {
	case err == nil:
		b.answer(ctx, q.ID, decidedText(r), false)
	case errors.As(err, &already):
		b.answer(ctx, q.ID, alreadyText(already.Request, b.loc), true)
	case errors.Is(err, approvals.ErrAllowAlwaysRefused):
		log.Warn("refused Allow always for a capability that never gets a grant")
		b.answer(ctx, q.ID, "Allow always is not offered for this request: its capability needs a person every time. Nothing changed.", true)
	case errors.Is(err, approvals.ErrNotFound):
		b.answer(ctx, q.ID, "This request no longer exists.", true)
	default:
		log.Error("decision failed", "err", err)
		b.answer(ctx, q.ID, tryAgain, true)
	}
}

// decidedText confirms a tap that decided.
func decidedText(r approvals.Request) string {
	switch {
	case r.Decision != nil && *r.Decision == approvals.AllowAlways && r.GrantID != nil:
		return fmt.Sprintf("♾ Allowed always: grant #%d", *r.GrantID)
	case r.Status == approvals.StatusAllowed:
		return "✅ Allowed once"
	}
	return "⛔ Denied"
}

// alreadyText tells the one who came second what happened first:
// "Already decided: allowed once by Roberto at 14:03".
func alreadyText(r approvals.Request, l locale.Locale) string {
	at := ""
	if r.DecidedAt != nil {
		at = " at " + l.Clock(*r.DecidedAt)
	}
	who := cards.DisplayName(r.DecidedBy)
	switch r.Status {
	case approvals.StatusExpired:
		return "Already decided: expired (nobody answered in time)" + at
	case approvals.StatusCancelled:
		return "Already decided: withdrawn by the agent" + at
	case approvals.StatusAllowed:
		what := "allowed"
		if r.Decision != nil && *r.Decision == approvals.AllowAlways {
			what = "allowed always"
		} else if r.Decision != nil {
			what = "allowed once"
		}
		return "Already decided: " + what + " by " + who + at
	}
	return "Already decided: denied by " + who + at
}

// revokeByButton handles a Revoke button of a /grants list, then redraws
// the list so the revoked grant disappears from it.
func (b *Bot) revokeByButton(ctx context.Context, q *tgbotapi.CallbackQuery, id int64, by approvals.Actor) {
	text, err := b.revoke(ctx, id, by)
	if err != nil {
		b.answer(ctx, q.ID, tryAgain, true)
		return
	}
	b.answer(ctx, q.ID, text, false)
	if q.Message != nil && q.Message.Chat != nil {
		if m, err := b.grantsMessage(ctx); err == nil {
			_ = b.edit(ctx, q.Message.Chat.ID, q.Message.MessageID, m, "")
		}
	}
}

// revoke revokes a grant on behalf of an approver and says what happened.
func (b *Bot) revoke(ctx context.Context, id int64, by approvals.Actor) (string, error) {
	changed, err := b.svc.Grants().Revoke(ctx, id, "revoked", by.String())
	if err != nil {
		b.log.Error("revoke failed", "grant_id", id, "user_id", by.ID, "err", err)
		return "", err
	}
	if !changed {
		return fmt.Sprintf("Grant #%d is not active: nothing to revoke.", id), nil
	}
	b.log.Info("grant revoked", "grant_id", id, "user_id", by.ID)
	return fmt.Sprintf("Grant #%d revoked.", id), nil
}

func (b *Bot) grantsMessage(ctx context.Context) (cards.TelegramMessage, error) {
	gs, err := b.svc.Grants().List(ctx, policy.GrantFilter{Limit: cards.TelegramMaxGrants + 1})
	if err != nil {
		return cards.TelegramMessage{}, err
	}
	return cards.TelegramGrants(gs, len(gs) > cards.TelegramMaxGrants, b.loc), nil
}

// onMessage handles a text: a command, or a reply to a card (a note).
func (b *Bot) onMessage(ctx context.Context, m *tgbotapi.Message) {
	if m.From == nil || m.From.IsBot || m.Chat == nil || m.Text == "" {
		return
	}
	switch {
	case strings.HasPrefix(m.Text, "/"):
		b.onCommand(ctx, m)
	case m.ReplyToMessage != nil:
		b.onReply(ctx, m)
	}
}

// onCommand answers a bot command in the chat it was typed in. /start and
// /help are for anyone (a newcomer needs /start to learn the id to put in
// telegram.approvers); the rest only for approvers.
func (b *Bot) onCommand(ctx context.Context, m *tgbotapi.Message) {
	name, args, forUs := commandName(m.Text, b.botUsername())
	if !forUs {
		return
	}
	say := func(format string, a ...any) {
		b.reply(ctx, m.Chat.ID, m.MessageID, plainMessage(fmt.Sprintf(format, a...)))
	}
	switch name {
	case "start":
		b.reply(ctx, m.Chat.ID, m.MessageID, startMessage(m.From.ID, b.isApprover(m.From)))
		return
	case "help":
		say("%s", helpText)
		return
	}
	if !b.isApprover(m.From) {
		b.log.Warn("refused a command from a non-approver", "user_id", m.From.ID, "command", name)
		say("%s.", NotApprover)
		return
	}
	by := actor(m.From)
	switch name {
	case "pending":
		n, err := b.svc.Resend(ctx, Name)
		switch {
		case err != nil:
			b.log.Error("resend failed", "err", err)
			say("%s", tryAgain)
		case n == 0:
			say("Nothing is pending.")
		case m.Chat.ID == b.cfg.ChatID:
			say("Sending %d pending card(s) again.", n)
		default:
			say("Sending %d pending card(s) again, to the approvals chat.", n)
		}
	case "grants":
		gm, err := b.grantsMessage(ctx)
		if err != nil {
			b.log.Error("list grants failed", "err", err)
			say("%s", tryAgain)
			return
		}
		b.reply(ctx, m.Chat.ID, m.MessageID, gm)
	case "revoke":
		id, err := strconv.ParseInt(strings.TrimPrefix(args, "#"), 10, 64)
		if err != nil || id <= 0 {
			say("Usage: /revoke ID (the grant number from /grants).")
			return
		}
		text, err := b.revoke(ctx, id, by)
		if err != nil {
			say("%s", tryAgain)
			return
		}
		say("%s", text)
	default:
		say("Unknown command /%s. /help lists the commands.", name)
	}
}

const helpText = `This bot asks you before AI agents act.

Each card shows what an agent wants to do. Tap ✅ Allow once, ♾ Allow always (writes a grant, shown on the card with its expiry) or ⛔ Deny. Reply to a card within 10 minutes of deciding to leave the agent a note.

/pending — send the pending cards again
/grants — active grants, with Revoke buttons
/revoke ID — revoke a grant
/start — your Telegram user id, and whether you are an approver
/help — this text`

func startMessage(id int64, approver bool) cards.TelegramMessage {
	status := "You are an approver for this gateway: your taps decide."
	if !approver {
		status = NotApprover + ". To become one, add this id to telegram.approvers in the gateway config and restart it."
	}
	markup := fmt.Sprintf("Your Telegram user id is <code>%d</code>.\n%s", id, html.EscapeString(status))
	return cards.TelegramMessage{HTML: markup, Plain: fmt.Sprintf("Your Telegram user id is %d.\n%s", id, status)}
}

// onReply stores an approver's reply to a card as the request's note, if
// it comes within approvals.NoteWindow of the decision. A reply to any
// other message is ordinary chat and ignored.
func (b *Bot) onReply(ctx context.Context, m *tgbotapi.Message) {
	ref := cardRef(m.Chat.ID, m.ReplyToMessage.MessageID)
	r, err := b.svc.RequestByCardRef(ctx, Name, ref)
	if err != nil {
		if !errors.Is(err, approvals.ErrNotFound) {
			b.log.Error("look up card", "err", err)
		}
		return
	}
	say := func(s string) { b.reply(ctx, m.Chat.ID, m.MessageID, plainMessage(s)) }
	if !b.isApprover(m.From) {
		b.log.Warn("refused a note from a non-approver", "user_id", m.From.ID, "request_id", r.ID)
		say(NotApprover + ".")
		return
	}
	if !r.Status.Finished() {
		say("Decide first: a note goes with a decision, within 10 minutes of it.")
		return
	}
	r, err = b.svc.SetNote(ctx, r.ID, m.Text, actor(m.From))
	switch {
	case errors.Is(err, approvals.ErrInvalid):
		say(fmt.Sprintf("Too late for a note: notes are taken within %s of the decision.", approvals.NoteWindow))
		return
	case err != nil:
		b.log.Error("set note failed", "request_id", r.ID, "err", err)
		say(tryAgain)
		return
	}
	b.log.Info("note attached", "request_id", r.ID, "user_id", m.From.ID)
	say("📝 Note saved; the agent reads it with the request.")
	if err := b.Update(ctx, r, ref); err != nil {
		b.log.Warn("could not show the note on the card", "request_id", r.ID, "err", err)
	}
}

// plainMessage is a message of plain text, escaped for parse_mode HTML.
func plainMessage(s string) cards.TelegramMessage {
	return cards.TelegramMessage{HTML: html.EscapeString(s), Plain: s}
}
