package telegram

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
)

// redactedToken replaces the bot token wherever it would appear in text.
const redactedToken = "<bot-token>"

// maxAnswerText is the Bot API's limit on answerCallbackQuery text
// (https://core.telegram.org/bots/api#answercallbackquery).
const maxAnswerText = 200

// Error is a failed Bot API call. Its text never contains the bot token:
// the library's network errors carry the request URL, which does, so the
// original error is kept only as text, redacted.
type Error struct {
	Method string
	// Code is Telegram's error_code (an HTTP status); 0 for network,
	// timeout and decoding errors.
	Code int
	// Description is Telegram's description, or the redacted error text.
	Description string
	// RetryAfter is parameters.retry_after: how long Telegram wants us to
	// wait before any further call.
	RetryAfter time.Duration
	// MigrateToChatID is set when a group became a supergroup: the chat id
	// in the config must change.
	MigrateToChatID int64
	cause           error // a context error, for errors.Is; never the library's error
}

// Error says which call failed and how, with the token already redacted.
func (e *Error) Error() string {
	s := "telegram " + e.Method + ": "
	if e.Code != 0 {
		s += strconv.Itoa(e.Code) + " "
	}
	s += e.Description
	if e.MigrateToChatID != 0 {
		s += fmt.Sprintf(" (the group is now the supergroup %d: set telegram.chat_id to it)", e.MigrateToChatID)
	}
	return s
}

// Unwrap exposes context.Canceled / DeadlineExceeded, and nothing that
// could print the token.
func (e *Error) Unwrap() error { return e.cause }

// FloodError is a 429 answer: it implements approvals.RetryAfterError, so
// the card dispatcher pauses the whole channel for retry_after, as
// Telegram's flood control asks.
type FloodError struct{ Err *Error }

// Error is the text of the underlying *Error.
func (e *FloodError) Error() string { return e.Err.Error() }

// RetryAfter is how long to wait before calling Telegram again.
func (e *FloodError) RetryAfter() time.Duration { return e.Err.RetryAfter }

// Unwrap returns the *Error.
func (e *FloodError) Unwrap() error { return e.Err }

var (
	_ approvals.RetryAfterError = (*FloodError)(nil)
	_ approvals.Announcer       = (*Bot)(nil)
	_ approvals.DigestSender    = (*Bot)(nil)
)

// redact removes the bot token from s.
func (b *Bot) redact(s string) string { return b.redactor.Replace(s) }

// apiError turns a library error into an *Error, redacted.
func (b *Bot) apiError(method string, err error) *Error {
	e := &Error{Method: method}
	var te *tgbotapi.Error
	switch {
	case errors.As(err, &te):
		e.Code, e.Description = te.Code, b.redact(te.Message)
		e.RetryAfter = time.Duration(te.RetryAfter) * time.Second
		e.MigrateToChatID = te.MigrateToChatID
	default:
		e.Description = b.redact(err.Error())
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			e.cause = context.DeadlineExceeded
		case errors.Is(err, context.Canceled):
			e.cause = context.Canceled
		}
	}
	return e
}

// sendError is apiError as the dispatcher wants it: a *FloodError for 429.
func (b *Bot) sendError(method string, err error) error {
	e := b.apiError(method, err)
	if e.Code == http.StatusTooManyRequests {
		if e.RetryAfter <= 0 {
			e.RetryAfter = time.Second
		}
		return &FloodError{e}
	}
	return e
}

// Post sends the card of a pending request to telegram.chat_id and
// returns its reference, "chatID:messageID", which the service persists
// so the card can be edited after a restart. One attempt: the service
// retries with backoff, and pauses on a *FloodError.
func (b *Bot) Post(ctx context.Context, r approvals.Request) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	c := b.card(ctx, r)
	m := Telegram(c)
	msg := tgbotapi.NewMessage(b.cfg.ChatID, m.HTML)
	msg.ParseMode = tgbotapi.ModeHTML
	msg.DisableWebPagePreview = true
	if m.Keyboard != nil {
		msg.ReplyMarkup = m.Keyboard
	}
	sent, err := b.bot(ctx).Send(msg)
	if err != nil && isParseError(err) {
		// Our markup is tested, but a card that cannot be shown is worse
		// than a plain one: say it in plain text rather than retry forever.
		b.log.Error("card markup refused; sending it as plain text", "request_id", r.ID, "err", b.apiError("sendMessage", err))
		msg.Text, msg.ParseMode = m.Plain, ""
		sent, err = b.bot(ctx).Send(msg)
	}
	if err != nil && isButtonURLError(err) && c.ConfirmButton() {
		// The Bot API refused the step-up card's link as a button: the
		// card shows it as text instead.
		b.log.Warn("Confirm on the web page refused as a button; the card shows the link as text", "request_id", r.ID,
			"err", b.apiError("sendMessage", err))
		c.ConfirmAsText = true
		m = Telegram(c)
		msg.Text, msg.ParseMode, msg.ReplyMarkup = m.HTML, tgbotapi.ModeHTML, m.Keyboard
		sent, err = b.bot(ctx).Send(msg)
	}
	if err != nil {
		return "", b.sendError("sendMessage", err)
	}
	return cardRef(b.cfg.ChatID, sent.MessageID), nil
}

// Summarize sends chat_id how many requests of each agent wait without a
// card of their own (past its cards_per_minute), with the web page's
// link: one plain-text message.
func (b *Bot) Summarize(ctx context.Context, waiting []approvals.Waiting) error {
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	msg := tgbotapi.NewMessage(b.cfg.ChatID, cards.WaitingSummary(waiting, b.publicURL, b.loc))
	msg.DisableWebPagePreview = true
	if _, err := b.bot(ctx).Send(msg); err != nil {
		return b.sendError("sendMessage", err)
	}
	return nil
}

// Update edits a card to show its request now: the outcome and no buttons
// once finished. An edit that changes nothing, or of a message that no
// longer exists (deleted by someone in the chat), is done, not retried.
func (b *Bot) Update(ctx context.Context, r approvals.Request, ref string) error {
	chat, id, ok := parseRef(ref)
	if !ok {
		b.log.Error("card reference unreadable; not editing", "request_id", r.ID, "ref", ref)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	c := b.card(ctx, r)
	err := b.edit(ctx, chat, id, Telegram(c), r.ID)
	if errors.Is(err, errButtonURL) && c.ConfirmButton() {
		c.ConfirmAsText = true // as Post does: the link as text
		err = b.edit(ctx, chat, id, Telegram(c), r.ID)
	}
	return err
}

// errButtonURL is the Bot API refusing a step-up card's URL button.
var errButtonURL = errors.New("telegram refused the card's URL button")

// Remind sends a short reminder of a pending request as a reply to its
// card, so it notifies the chat and leads back to the buttons. One
// attempt: the next reminder comes remind_every later.
func (b *Bot) Remind(ctx context.Context, r approvals.Request, ref string) error {
	chat, id, ok := parseRef(ref)
	if !ok {
		return fmt.Errorf("telegram: card reference %q unreadable", ref)
	}
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	msg := tgbotapi.NewMessage(chat, html.EscapeString(cards.Reminder(r, b.loc)))
	msg.ParseMode = tgbotapi.ModeHTML
	msg.ReplyToMessageID = id
	msg.AllowSendingWithoutReply = true
	if _, err := b.bot(ctx).Send(msg); err != nil {
		return b.sendError("sendMessage", err)
	}
	return nil
}

// Announce posts a notification of [[policy.notify]] to telegram.chat_id:
// a plain message, no keyboard. One attempt: the service retries with
// backoff, and pauses on a *FloodError.
func (b *Bot) Announce(ctx context.Context, n approvals.Notification) error {
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	msg := tgbotapi.NewMessage(b.cfg.ChatID, cards.NewNotification(n.Request, b.loc).Render(b.loc, TelegramMarkup))
	msg.ParseMode = tgbotapi.ModeHTML
	msg.DisableWebPagePreview = true
	if _, err := b.bot(ctx).Send(msg); err != nil {
		return b.sendError("sendMessage", err)
	}
	return nil
}

// SendDigest posts the daily digest ([approvals] digest) to the chat: a
// plain message, no buttons.
func (b *Bot) SendDigest(ctx context.Context, d approvals.Digest) error {
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	msg := tgbotapi.NewMessage(b.cfg.ChatID, cards.NewDigest(d, b.loc).Render(b.loc, TelegramMarkup))
	msg.ParseMode = tgbotapi.ModeHTML
	msg.DisableWebPagePreview = true
	if _, err := b.bot(ctx).Send(msg); err != nil {
		return b.sendError("sendMessage", err)
	}
	return nil
}

// SendBulletin posts a bulletin (a passkey added or removed) to the chat:
// a plain message, no buttons.
func (b *Bot) SendBulletin(ctx context.Context, m approvals.Bulletin) error {
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	msg := tgbotapi.NewMessage(b.cfg.ChatID, cards.NewBulletin(m, b.loc).Render(TelegramMarkup))
	msg.ParseMode = tgbotapi.ModeHTML
	msg.DisableWebPagePreview = true
	if _, err := b.bot(ctx).Send(msg); err != nil {
		return b.sendError("sendMessage", err)
	}
	return nil
}

// edit replaces a message's text and keyboard. A nil keyboard removes the
// buttons (sent explicitly as an empty keyboard).
func (b *Bot) edit(ctx context.Context, chat int64, id int, m TelegramMessage, requestID string) error {
	e := tgbotapi.NewEditMessageText(chat, id, m.HTML)
	e.ParseMode = tgbotapi.ModeHTML
	e.DisableWebPagePreview = true
	e.ReplyMarkup = m.Keyboard
	if e.ReplyMarkup == nil {
		e.ReplyMarkup = &tgbotapi.InlineKeyboardMarkup{InlineKeyboard: [][]tgbotapi.InlineKeyboardButton{}}
	}
	_, err := b.bot(ctx).Send(e)
	if err != nil && isParseError(err) {
		e.Text, e.ParseMode = m.Plain, ""
		_, err = b.bot(ctx).Send(e)
	}
	if err == nil {
		return nil
	}
	if isButtonURLError(err) {
		return fmt.Errorf("%w: %v", errButtonURL, b.apiError("editMessageText", err))
	}
	ae := b.apiError("editMessageText", err)
	desc := strings.ToLower(ae.Description)
	switch {
	case ae.Code == http.StatusBadRequest && strings.Contains(desc, "message is not modified"):
		return nil
	case ae.Code == http.StatusBadRequest && (strings.Contains(desc, "message to edit not found") ||
		strings.Contains(desc, "message can't be edited")):
		b.log.Warn("card can no longer be edited; leaving it", "request_id", requestID, "chat_id", chat,
			"message_id", id, "err", ae)
		return nil
	}
	return b.sendError("editMessageText", err)
}

// isButtonURLError is the Bot API refusing a URL button's address.
func isButtonURLError(err error) bool {
	var te *tgbotapi.Error
	if !errors.As(err, &te) || te.Code != http.StatusBadRequest {
		return false
	}
	m := strings.ToLower(te.Message)
	return strings.Contains(m, "button_url_invalid") || strings.Contains(m, "wrong http url") ||
		strings.Contains(m, "url host is empty") || strings.Contains(m, "unsupported url protocol")
}

func isParseError(err error) bool {
	var te *tgbotapi.Error
	return errors.As(err, &te) && te.Code == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(te.Message), "can't parse entities")
}

// render is the card of r as Telegram shows it. The card must say until
// when Allow always grants ("until 2027-02-18"); the service stores that
// with the request, and for a row that lacks it (written by an older
// gateway) it is looked up on the grant, or computed for a pending
// request as Allow always would compute it now.
func (b *Bot) render(ctx context.Context, r approvals.Request) TelegramMessage {
	return Telegram(b.card(ctx, r))
}

// card is r's neutral card as render shows it.
func (b *Bot) card(ctx context.Context, r approvals.Request) cards.Card {
	if r.GrantExpiresAt == nil {
		switch {
		case r.GrantID != nil:
			if g, err := b.svc.Grants().Get(ctx, *r.GrantID); err == nil {
				r.GrantExpiresAt = g.ExpiresAt
			}
		case r.Status == approvals.StatusPending && r.AllowAlwaysOffered() && b.grantTTL > 0:
			t := b.now().Add(b.grantTTL)
			r.GrantExpiresAt = &t
		}
	}
	return cards.New(r, b.loc).WithPage(b.publicURL).WithConfirm(b.linkBase)
}

// editKeyboard replaces a message's inline keyboard (nil: none)
// (https://core.telegram.org/bots/api#editmessagereplymarkup).
func (b *Bot) editKeyboard(ctx context.Context, chat int64, id int, kb *tgbotapi.InlineKeyboardMarkup) error {
	if kb == nil {
		kb = &tgbotapi.InlineKeyboardMarkup{InlineKeyboard: [][]tgbotapi.InlineKeyboardButton{}}
	}
	ctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	_, err := b.bot(ctx).Send(tgbotapi.NewEditMessageReplyMarkup(chat, id, *kb))
	if err != nil && strings.Contains(err.Error(), "message is not modified") {
		return nil
	}
	return err
}

// cardRef is how a card is referenced in the cards table.
func cardRef(chat int64, messageID int) string {
	return strconv.FormatInt(chat, 10) + ":" + strconv.Itoa(messageID)
}

func parseRef(ref string) (int64, int, bool) {
	c, m, ok := strings.Cut(ref, ":")
	if !ok {
		return 0, 0, false
	}
	chat, err1 := strconv.ParseInt(c, 10, 64)
	id, err2 := strconv.Atoi(m)
	return chat, id, err1 == nil && err2 == nil && id > 0
}

// answer answers a callback query: every tap gets one, within seconds,
// the refused ones too (show_alert makes it a dialog the person must
// dismiss). A short flood wait is honoured once; the query is useless
// after a few seconds anyway.
func (b *Bot) answer(ctx context.Context, queryID, text string, alert bool) {
	cfg := tgbotapi.NewCallback(queryID, cards.Truncate(text, maxAnswerText))
	cfg.ShowAlert = alert
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, b.callTimeout)
		_, err := b.bot(cctx).Request(cfg)
		cancel()
		if err == nil {
			return
		}
		e := b.apiError("answerCallbackQuery", err)
		if attempt == 1 && (e.Code == http.StatusTooManyRequests && e.RetryAfter <= 5*time.Second || e.Code >= 500) {
			if sleep(ctx, max(e.RetryAfter, 200*time.Millisecond)) {
				continue
			}
		}
		b.log.Warn("could not answer a tap", "err", e)
		return
	}
}

// reply sends a message to a chat (a command's answer), as a reply to
// replyTo when it is not 0. Like answer, it tries twice at most: the
// person is waiting and can simply ask again.
func (b *Bot) reply(ctx context.Context, chat int64, replyTo int, m TelegramMessage) {
	msg := tgbotapi.NewMessage(chat, m.HTML)
	msg.ParseMode = tgbotapi.ModeHTML
	msg.DisableWebPagePreview = true
	msg.ReplyToMessageID = replyTo
	msg.AllowSendingWithoutReply = true
	if m.Keyboard != nil {
		msg.ReplyMarkup = m.Keyboard
	}
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, b.callTimeout)
		_, err := b.bot(cctx).Send(msg)
		cancel()
		if err == nil {
			return
		}
		e := b.apiError("sendMessage", err)
		if attempt == 1 && (e.Code == http.StatusTooManyRequests && e.RetryAfter <= 5*time.Second || e.Code >= 500) {
			if sleep(ctx, max(e.RetryAfter, 200*time.Millisecond)) {
				continue
			}
		}
		b.log.Warn("could not reply", "chat_id", chat, "err", e)
		return
	}
}
