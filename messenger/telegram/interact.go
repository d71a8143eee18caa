package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// NotApprover is the English of what anyone outside telegram.approvers
// reads when tapping a button, using an approver command or replying to a
// card (catalog key "tg.not_approver"); tests look for it.
const NotApprover = "You are not an approver for this gateway"

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
		b.answer(ctx, q.ID, b.loc.T("tg.bad_button"), true)
		return
	}
	if q.From == nil || cb.Revoke() && !b.isApprover(q.From) {
		log.Warn("refused a tap from a non-approver", "request_id", cb.RequestID, "grant_id", cb.GrantID)
		b.answer(ctx, q.ID, b.loc.T("tg.not_approver"), true)
		return
	}
	by := actor(q.From)
	if cb.Revoke() {
		b.revokeByButton(ctx, q, cb.GrantID, by)
		return
	}
	// A tap counts only as a button of the message it was tapped on:
	// Telegram gives the message as it stores it, keyboard included, and a
	// client can send any data for any message (a button of another card,
	// a scope that was never offered, a replay of a closed keyboard).
	if !onKeyboard(q) {
		// A finished card has no keyboard left: a late tap from a phone
		// that still shows it learns who decided (it could change nothing).
		r, err := b.svc.Get(ctx, cb.RequestID)
		if err == nil && r.Status.Finished() {
			b.answer(ctx, q.ID, cards.AlreadyDecided(r, b.loc), true)
			return
		}
		// An Allow (an old card's, or forged) on a request that needs a
		// passkey: say where to allow it.
		if err == nil && r.StepUp != "" && cb.Decision != "" && cb.Decision != approvals.Deny {
			log.Warn("refused an allow tap on a step-up request", "request_id", cb.RequestID)
			b.refuse(ctx, q, log, approvals.ErrStepUpRequired)
			return
		}
		log.Warn("refused a tap whose data is not a button of its message", "request_id", cb.RequestID)
		b.answer(ctx, q.ID, b.loc.T("tg.bad_button"), true)
		return
	}
	// Who may decide is the request's route's to say (it may name people
	// outside telegram.approvers, or leave some of them out): the service
	// checks, told whether the person is one of this channel's approvers.
	by.Outsider = !b.isApprover(q.From)
	if cb.Menu || cb.Back {
		b.switchKeyboard(ctx, q, cb)
		return
	}
	log = log.With("request_id", cb.RequestID, "decision", cb.Decision)
	ch := approvals.Choice{Decision: cb.Decision, Duration: cb.For, EveryAgent: cb.EveryAgent}
	if cb.Scope > 0 {
		cur, err := b.svc.Get(ctx, cb.RequestID)
		if err == nil {
			ch, err = approvals.ChoiceOfScope(cur, ch, strconv.Itoa(cb.Scope-1))
		}
		if err != nil && !errors.Is(err, approvals.ErrNotFound) {
			b.refuse(ctx, q, log, err)
			return
		}
	}
	r, err := b.svc.DecideChoice(ctx, cb.RequestID, ch, by)
	if err != nil {
		b.refuse(ctx, q, log, err)
		return
	}
	b.answer(ctx, q.ID, decidedText(r, b.loc), false)
}

// refuse answers a tap whose decision was not recorded with
// cards.Refusal's words, as an alert, and logs what deserves it.
func (b *Bot) refuse(ctx context.Context, q *tgbotapi.CallbackQuery, log *slog.Logger, err error) {
	text, expected := cards.Refusal(err, b.loc)
	switch {
	case !expected:
		log.Error("decision failed", "err", err)
	case errors.Is(err, approvals.ErrNotApprover):
		log.Warn("refused a tap from a non-approver")
	case errors.Is(err, approvals.ErrAllowAlwaysRefused), errors.Is(err, approvals.ErrNotOffered):
		log.Warn("refused a choice the card does not offer", "err", err)
	}
	b.answer(ctx, q.ID, text, true)
}

// onKeyboard reports whether the tap's data is one of the buttons of the
// message it was tapped on.
func onKeyboard(q *tgbotapi.CallbackQuery) bool {
	if q.Message == nil || q.Message.ReplyMarkup == nil {
		return false
	}
	for _, row := range q.Message.ReplyMarkup.InlineKeyboard {
		for _, btn := range row {
			if btn.CallbackData != nil && *btn.CallbackData == q.Data {
				return true
			}
		}
	}
	return false
}

// switchKeyboard answers Allow always (Menu: the scope keyboard) and Back
// (the card's own keyboard) by editing the card's buttons; it decides
// nothing. A finished request gets its finished card instead.
func (b *Bot) switchKeyboard(ctx context.Context, q *tgbotapi.CallbackQuery, cb cards.Callback) {
	r, err := b.svc.Get(ctx, cb.RequestID)
	if err != nil {
		b.refuse(ctx, q, b.log.With("request_id", cb.RequestID), err)
		return
	}
	if !b.isApprover(q.From) && !slices.Contains(r.Approvers, Name+":"+strconv.FormatInt(q.From.ID, 10)) {
		b.log.Warn("refused a tap from a non-approver", "request_id", r.ID, "user_id", q.From.ID)
		b.answer(ctx, q.ID, b.loc.T("tg.not_approver"), true)
		return
	}
	m := b.render(ctx, r)
	if r.Status.Finished() {
		b.answer(ctx, q.ID, cards.AlreadyDecided(r, b.loc), true)
	} else {
		if cb.Menu && cb.EveryAgent {
			m.Keyboard = TelegramEveryKeyboard(b.card(ctx, r))
			b.answer(ctx, q.ID, b.loc.T("tg.choose_scope"), false)
		} else if cb.Menu {
			m.Keyboard = TelegramScopeKeyboard(b.card(ctx, r))
			b.answer(ctx, q.ID, b.loc.T("tg.choose_scope"), false)
		} else {
			b.answer(ctx, q.ID, "", false)
		}
	}
	if err := b.editKeyboard(ctx, q.Message.Chat.ID, q.Message.MessageID, m.Keyboard); err != nil {
		b.log.Warn("could not switch the card's keyboard", "request_id", r.ID, "err", err)
	}
}

// decidedText confirms a tap that decided.
func decidedText(r approvals.Request, l locale.Locale) string {
	switch {
	case r.Status == approvals.StatusPending:
		return l.T("tg.counted", cards.Progress(r, l))
	case r.Decision != nil && *r.Decision == approvals.AllowSession && r.GrantID != nil:
		return l.T("tg.decided_session", *r.GrantID)
	case r.Decision != nil && *r.Decision == approvals.AllowFor && r.GrantID != nil:
		return l.T("tg.decided_for", cards.WhileWords(cards.AllowedFor(r)), *r.GrantID)
	case r.Decision != nil && *r.Decision == approvals.AllowAlways && r.GrantID != nil:
		return l.T("tg.decided_always", *r.GrantID)
	case r.Status == approvals.StatusAllowed:
		return l.T("tg.decided_once")
	}
	return l.T("tg.decided_deny")
}

// revokeByButton handles a Revoke button of a /grants list, then redraws
// the list so the revoked grant disappears from it.
func (b *Bot) revokeByButton(ctx context.Context, q *tgbotapi.CallbackQuery, id int64, by approvals.Actor) {
	if !b.isAdmin(q.From) {
		b.log.Warn("refused a revoke from a non-admin", "user_id", q.From.ID, "grant_id", id)
		b.answer(ctx, q.ID, b.loc.T("tg.not_admin"), true)
		return
	}
	text, err := b.revoke(ctx, id, by)
	if err != nil {
		b.answer(ctx, q.ID, b.loc.T("tg.try_again"), true)
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
	changed, err := b.svc.RevokeGrant(ctx, id, by)
	if errors.Is(err, approvals.ErrPolicyStepUp) {
		b.log.Warn("refused a revoke: policy_step_up is on", "grant_id", id, "user_id", by.ID)
		text, _ := cards.Refusal(err, b.loc)
		return text, nil
	}
	if err != nil {
		b.log.Error("revoke failed", "grant_id", id, "user_id", by.ID, "err", err)
		return "", err
	}
	if !changed {
		return b.loc.T("tg.revoke_inactive", id), nil
	}
	b.log.Info("grant revoked", "grant_id", id, "user_id", by.ID)
	return b.loc.T("tg.revoked", id), nil
}

func (b *Bot) grantsMessage(ctx context.Context) (TelegramMessage, error) {
	gs, err := b.svc.Grants().List(ctx, policy.GrantFilter{Limit: TelegramMaxGrants + 1})
	if err != nil {
		return TelegramMessage{}, err
	}
	return TelegramGrants(gs, len(gs) > TelegramMaxGrants, b.loc), nil
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

// onCommand answers a bot command in the chat it was typed in, when that
// is chat_id or an approver's private chat (see commandChat). /start and
// /help are for anyone (a newcomer needs /start to learn the id to put in
// telegram.approvers); the rest only for approvers.
func (b *Bot) onCommand(ctx context.Context, m *tgbotapi.Message) {
	name, args, forUs := commandName(m.Text, b.botUsername())
	if !forUs {
		return
	}
	if !b.commandChat(m, name) {
		// Another group the bot is in: an approver's slip must not post
		// the audit trail or the grants there. No answer, no change.
		b.log.Warn("ignored a command outside chat_id and the approvers' private chats",
			"chat_id", m.Chat.ID, "user_id", m.From.ID, "command", name)
		return
	}
	say := func(format string, a ...any) {
		b.reply(ctx, m.Chat.ID, m.MessageID, plainMessage(fmt.Sprintf(format, a...)))
	}
	switch name {
	case "start":
		b.reply(ctx, m.Chat.ID, m.MessageID, startMessage(m.From.ID, b.isApprover(m.From), b.loc))
		return
	case "help":
		say("%s", b.loc.T("tg.help"))
		return
	}
	if !b.isApprover(m.From) {
		b.log.Warn("refused a command from a non-approver", "user_id", m.From.ID, "command", name)
		say("%s.", b.loc.T("tg.not_approver"))
		return
	}
	by := actor(m.From)
	switch name {
	case "pending":
		n, err := b.svc.Resend(ctx, Name)
		switch {
		case err != nil:
			b.log.Error("resend failed", "err", err)
			say("%s", b.loc.T("tg.try_again"))
		case n == 0:
			say("%s", b.loc.T("tg.nothing_pending"))
		case m.Chat.ID == b.cfg.ChatID:
			say("%s", b.loc.T("tg.resending", n))
		default:
			say("%s", b.loc.T("tg.resending_elsewhere", n))
		}
	case "grants":
		gm, err := b.grantsMessage(ctx)
		if err != nil {
			b.log.Error("list grants failed", "err", err)
			say("%s", b.loc.T("tg.try_again"))
			return
		}
		b.reply(ctx, m.Chat.ID, m.MessageID, gm)
	case "history":
		rows, scope, err := b.svc.AuditLookup(ctx, args, cards.MaxAuditListed)
		if err != nil {
			b.log.Error("audit for telegram failed", "err", err)
			say("%s", b.loc.T("tg.try_again"))
			return
		}
		b.reply(ctx, m.Chat.ID, m.MessageID, TelegramAudit(rows, scope, b.loc))
	case "revoke":
		id, err := strconv.ParseInt(strings.TrimPrefix(args, "#"), 10, 64)
		if err != nil || id <= 0 {
			say("%s", b.loc.T("tg.revoke_usage"))
			return
		}
		if !b.isAdmin(m.From) {
			b.log.Warn("refused a revoke from a non-admin", "user_id", m.From.ID, "grant_id", id)
			say("%s", b.loc.T("tg.not_admin"))
			return
		}
		text, err := b.revoke(ctx, id, by)
		if err != nil {
			say("%s", b.loc.T("tg.try_again"))
			return
		}
		say("%s", text)
	default:
		say("%s", b.loc.T("tg.unknown_command", name))
	}
}

// commandChat says whether command name, in m, was typed where commands
// are answered: the configured chat_id, or an approver's private chat
// with the bot. /start and /help, which tell a newcomer its id and the
// commands and show nothing else, are answered in anyone's private chat.
func (b *Bot) commandChat(m *tgbotapi.Message, name string) bool {
	if m.Chat.ID == b.cfg.ChatID {
		return true
	}
	if !m.Chat.IsPrivate() || m.Chat.ID != m.From.ID {
		return false
	}
	return name == "start" || name == "help" || b.isApprover(m.From)
}

func startMessage(id int64, approver bool, l locale.Locale) TelegramMessage {
	status := l.T("tg.start_approver")
	if !approver {
		status = l.T("tg.start_not_approver")
	}
	idText := strconv.FormatInt(id, 10)
	markup := html.EscapeString(l.T("tg.start_id", "\x00")) // the id goes in a code span
	markup = strings.Replace(markup, "\x00", "<code>"+idText+"</code>", 1) + "\n" + html.EscapeString(status)
	return TelegramMessage{HTML: markup, Plain: l.T("tg.start_id", idText) + "\n" + status}
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
		say(b.loc.T("tg.not_approver") + ".")
		return
	}
	if !r.Status.Finished() {
		say(b.loc.T("tg.note_decide_first"))
		return
	}
	r, err = b.svc.SetNote(ctx, r.ID, m.Text, actor(m.From))
	switch {
	case errors.Is(err, approvals.ErrInvalid):
		say(b.loc.T("tg.note_too_late", int(approvals.NoteWindow/time.Minute)))
		return
	case err != nil:
		b.log.Error("set note failed", "request_id", r.ID, "err", err)
		say(b.loc.T("tg.try_again"))
		return
	}
	b.log.Info("note attached", "request_id", r.ID, "user_id", m.From.ID)
	say(b.loc.T("tg.note_saved"))
	if err := b.Update(ctx, r, ref); err != nil {
		b.log.Warn("could not show the note on the card", "request_id", r.ID, "err", err)
	}
}

// plainMessage is a message of plain text, escaped for parse_mode HTML.
func plainMessage(s string) TelegramMessage {
	return TelegramMessage{HTML: html.EscapeString(s), Plain: s}
}
