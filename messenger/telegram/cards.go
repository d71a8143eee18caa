package telegram

import (
	"fmt"
	"html"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// TelegramMaxText is the Bot API's limit on a message text: 4096 characters
// after entity parsing, counted in UTF-16 code units
// (https://core.telegram.org/bots/api#sendmessage). A longer text is
// refused outright, so the renderer shortens the card's fields until the
// visible text fits.
const TelegramMaxText = 4096

// telegramFieldFloor is the shortest a dynamic field gets while the card is
// being fitted under TelegramMaxText: short enough that every field at
// this size fits with room to spare, long enough to still say something.
const telegramFieldFloor = 64

// TelegramMessage is a card rendered for the Bot API. HTML goes out with
// parse_mode HTML; Plain is the same text as Telegram shows it (what the
// 4096 limit counts, and the fallback if Telegram ever refuses the
// markup); Keyboard is the inline keyboard, nil for a finished card so the
// edit removes the buttons.
type TelegramMessage struct {
	HTML     string
	Plain    string
	Keyboard *tgbotapi.InlineKeyboardMarkup
}

// Telegram renders c as Telegram HTML with its inline keyboard. Every
// dynamic string is escaped (an agent chooses the target and the intent:
// they must never become markup), and long fields are cut with a visible
// marker until the text fits TelegramMaxText.
func Telegram(c cards.Card) TelegramMessage {
	var m TelegramMessage
	for limit := TelegramMaxText; ; limit = limit * 3 / 4 {
		m = renderTelegram(c, max(limit, telegramFieldFloor))
		if cards.UTF16Len(m.Plain) <= TelegramMaxText || limit <= telegramFieldFloor {
			break
		}
	}
	m.Keyboard = TelegramKeyboard(c)
	return m
}

// TelegramKeyboard is the inline keyboard of a pending card: Allow once
// and Allow always on the first row, the Allow for buttons on the second,
// Deny alone on the last so a hurried thumb does not hit it by mistake.
// Allow always opens the scope keyboard (TelegramScopeKeyboard) when there
// is more than one scope to choose from; with one it decides at once.
// Allow always and Allow for are left out for capabilities that need a
// person every time. A finished card has no keyboard (nil).
func TelegramKeyboard(c cards.Card) *tgbotapi.InlineKeyboardMarkup {
	buttons := c.Buttons()
	if len(buttons) == 0 {
		return nil
	}
	if c.StepUp {
		return telegramStepUpKeyboard(c)
	}
	var allow, allowFor, deny []tgbotapi.InlineKeyboardButton // Allow this session goes with Allow for
	for _, b := range buttons {
		data := cards.EncodeDecision(c.RequestID, b.Decision)
		switch b.Decision {
		case approvals.AllowAlways:
			data = cards.EncodeScope(c.RequestID, 0)
			if len(c.Scopes) > 1 {
				data = cards.EncodeMenu(c.RequestID)
			}
		case approvals.AllowFor:
			d, _ := approvals.ParseWhile(b.While)
			allowFor = append(allowFor, tgbotapi.NewInlineKeyboardButtonData(b.Label, cards.EncodeAllowFor(c.RequestID, d)))
			continue
		case approvals.AllowSession:
			allowFor = append(allowFor, tgbotapi.NewInlineKeyboardButtonData(b.Label, data))
			continue
		}
		btn := tgbotapi.NewInlineKeyboardButtonData(b.Label, data)
		if b.Decision == approvals.Deny {
			deny = append(deny, btn)
		} else {
			allow = append(allow, btn)
		}
	}
	rows := [][]tgbotapi.InlineKeyboardButton{allow}
	if len(allowFor) > 0 {
		rows = append(rows, allowFor)
	}
	kb := tgbotapi.NewInlineKeyboardMarkup(append(rows, deny)...)
	return &kb
}

// telegramStepUpKeyboard is a step-up card's keyboard: no allow button
// (an allow needs the approver's passkey, on the web page), a URL button
// to the request's page when Telegram takes its URL, and Deny, which
// still decides with a tap.
func telegramStepUpKeyboard(c cards.Card) *tgbotapi.InlineKeyboardMarkup {
	deny := tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData(c.Locale.T("button.deny"),
		cards.EncodeDecision(c.RequestID, approvals.Deny)))
	if !c.ConfirmButton() {
		kb := tgbotapi.NewInlineKeyboardMarkup(deny)
		return &kb
	}
	kb := tgbotapi.NewInlineKeyboardMarkup(
		tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonURL(c.Locale.T("button.confirm_web"), c.ConfirmURL)), deny)
	return &kb
}

// telegramMaxScopeLabel bounds a scope button's text (Telegram cuts long
// button labels itself, without a marker): a longer scope is cut with the
// visible marker, and the card's Target line above shows the whole path.
const telegramMaxScopeLabel = 120

// TelegramScopeKeyboard is the second keyboard of a pending card, shown
// by Allow always: one button per scope, narrowest first, each naming its
// whole pattern (escaped like every agent string), then Back to the
// card's own keyboard.
func TelegramScopeKeyboard(c cards.Card) *tgbotapi.InlineKeyboardMarkup {
	if !c.Pending || !c.AllowAlways {
		return nil
	}
	rows := make([][]tgbotapi.InlineKeyboardButton, 0, len(c.Scopes)+1)
	for i, sc := range c.Scopes {
		if sc == "*" {
			sc = c.Locale.T("card.any_target")
		}
		label, _ := cards.CutIn(cards.OneLine(c.Locale.T("button.scope", sc)), telegramMaxScopeLabel, c.Locale)
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData(label, cards.EncodeScope(c.RequestID, i))))
	}
	if !c.Guarded {
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(
			tgbotapi.NewInlineKeyboardButtonData(c.Locale.T("button.every_agent_menu"), cards.EncodeEveryMenu(c.RequestID))))
	}
	rows = append(rows, tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData(c.Locale.T("button.back"), cards.EncodeBack(c.RequestID))))
	kb := tgbotapi.NewInlineKeyboardMarkup(rows...)
	return &kb
}

// TelegramEveryKeyboard is the keyboard the scope keyboard's "For every
// agent" opens: the same scopes, each granting every agent of the
// principal (never offered on a guarded route), then Back to the card's
// own keyboard. Nil when the card offers no such choice.
func TelegramEveryKeyboard(c cards.Card) *tgbotapi.InlineKeyboardMarkup {
	if !c.Pending || !c.AllowAlways || c.Guarded {
		return nil
	}
	rows := make([][]tgbotapi.InlineKeyboardButton, 0, len(c.Scopes)+1)
	for i, sc := range c.Scopes {
		if sc == "*" {
			sc = c.Locale.T("card.any_target")
		}
		label, _ := cards.CutIn(cards.OneLine(c.Locale.T("button.scope_every", sc)), telegramMaxScopeLabel, c.Locale)
		rows = append(rows, tgbotapi.NewInlineKeyboardRow(tgbotapi.NewInlineKeyboardButtonData(label, cards.EncodeEveryScope(c.RequestID, i))))
	}
	rows = append(rows, tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData(c.Locale.T("button.back"), cards.EncodeBack(c.RequestID))))
	kb := tgbotapi.NewInlineKeyboardMarkup(rows...)
	return &kb
}

// tgText builds the HTML and the plain text of a message side by side, so
// the length Telegram counts is known without parsing the HTML back.
type tgText struct{ html, plain strings.Builder }

// text appends s escaped. Invalid UTF-8 becomes U+FFFD: the Bot API
// refuses the whole message otherwise.
func (t *tgText) text(s string) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	t.html.WriteString(html.EscapeString(s))
	t.plain.WriteString(s)
}

// tag appends s escaped inside <name>…</name>.
func (t *tgText) tag(name, s string) {
	t.html.WriteString("<" + name + ">")
	t.text(s)
	t.html.WriteString("</" + name + ">")
}

func (t *tgText) nl() { t.text("\n") }

func renderTelegram(c cards.Card, limit int) TelegramMessage {
	l := c.Locale
	cs := cards.NewCuts(l)
	cut := func(field, s string) string { return cs.Cut(field, cards.OneLine(s), limit) }
	var t tgText
	if c.Pending {
		t.text("🔐 ")
	}
	t.tag("b", cut(l.T("label.agent"), c.Title))
	t.nl()
	for _, w := range c.Warnings() {
		t.tag("b", w)
		t.nl()
	}
	t.nl()
	// Every string an agent chooses goes in a code entity: Telegram makes
	// no link, mention, hashtag or command of what is inside one.
	t.text(l.T("label.agent") + ": ")
	t.tag("code", cut(l.T("label.agent"), c.Agent))
	t.text(" · " + l.T("label.level_lc") + " ")
	t.tag("b", c.Level)
	t.nl()
	t.text(l.T("label.capability") + ": ")
	t.tag("code", c.Capability)
	if c.Critical {
		t.text(" · ⚠️ " + l.T("label.critical"))
	} else {
		t.text(" · " + l.T("label.not_critical"))
	}
	t.nl()
	if target := cs.Cut(l.T("label.target"), c.Target, limit); strings.Contains(target, "\n") {
		// A multi-line command is shown as a block, line breaks and all:
		// they matter, and the block cannot pass for more card lines.
		t.text(l.T("label.target") + ":")
		t.nl()
		t.tag("pre", target)
	} else {
		t.text(l.T("label.target") + ": ")
		t.tag("code", target)
	}
	t.nl()
	if c.HostASCII != "" {
		t.text(l.T("label.host") + ": ")
		t.tag("code", cut(l.T("label.host"), c.Host))
		t.text(" → ")
		t.tag("code", c.HostASCII)
		t.nl()
	}
	if c.Intent != "" {
		t.text(l.T("label.intent") + ": ")
		t.tag("code", cut(l.T("label.intent"), c.Intent))
		t.nl()
	}
	if c.Executor != "" {
		t.text(l.T("label.executor") + ": ")
		t.tag("code", cut(l.T("label.executor"), c.Executor))
		t.nl()
	}
	if c.Summary != "" {
		t.text(l.T("label.summary") + ": ")
		t.tag("code", cut(l.T("label.summary"), c.Summary))
		t.nl()
	}
	if c.HasVaglio {
		t.text(l.T("label.vaglio") + ": ")
		t.tag("code", cut(l.T("label.vaglio"), c.Vaglio))
		t.nl()
	}
	t.nl()
	if c.Pending {
		if c.AllowAlways {
			t.text("♾ ")
			t.tag("code", cut(l.T("button.allow_always"), c.GrantPreview))
		} else {
			t.text("♾ " + l.T("card.no_allow_always", c.Capability))
		}
		t.nl()
		t.text("⏳ " + c.Locale.Expires(c.ExpiresAt))
		t.nl()
		if c.Escalation != "" {
			t.text(c.Escalation)
			t.nl()
		}
		if c.Progress != "" {
			t.tag("b", cut(l.T("label.request"), c.Progress))
			t.nl()
		}
		if c.StepUp {
			t.tag("b", cards.StepUpLine(c))
			t.nl()
		}
	} else {
		t.tag("b", cut(l.T("label.request"), c.StatusLine))
		t.nl()
	}
	if c.Note != "" {
		t.text("📝 " + l.T("label.note") + ": " + cs.Cut(l.T("label.note"), c.Note, limit))
		t.nl()
	}
	if cs.Any() {
		t.text(cs.Line(l))
		if c.Linked() {
			t.html.WriteString(`<a href="` + html.EscapeString(c.PageURL) + `">`)
			t.text(c.PageURL)
			t.html.WriteString("</a>")
		} else {
			t.tag("code", c.PageURL)
			t.text(l.T("card.not_linked"))
		}
		t.nl()
	}
	t.text(l.T("label.request") + " ")
	t.tag("code", c.RequestID)
	return TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
}

// TelegramMaxGrants is how many grants one /grants message lists: each has
// a Revoke button, and a longer list is unreadable on a phone anyway (the
// rest are one `gateway policy grants` away).
const TelegramMaxGrants = 20

// TelegramGrants renders the answer to /grants: the active grants, newest
// first, each with a Revoke button whose callback data names the grant.
// more says there are grants beyond those given. Dynamic strings are
// escaped and cut like a card's.
func TelegramGrants(grants []policy.Grant, more bool, l locale.Locale) TelegramMessage {
	if len(grants) > TelegramMaxGrants {
		grants, more = grants[:TelegramMaxGrants], true
	}
	var m TelegramMessage
	for limit := 512; ; limit /= 2 {
		m = renderTelegramGrants(grants, more, l, max(limit, telegramFieldFloor/2))
		if cards.UTF16Len(m.Plain) <= TelegramMaxText || limit <= telegramFieldFloor/2 {
			break
		}
	}
	if len(grants) > 0 {
		rows := make([][]tgbotapi.InlineKeyboardButton, 0, len(grants))
		for _, g := range grants {
			rows = append(rows, tgbotapi.NewInlineKeyboardRow(
				tgbotapi.NewInlineKeyboardButtonData(l.T("grants.revoke_button", g.ID), cards.EncodeRevoke(g.ID))))
		}
		kb := tgbotapi.NewInlineKeyboardMarkup(rows...)
		m.Keyboard = &kb
	}
	return m
}

func renderTelegramGrants(grants []policy.Grant, more bool, l locale.Locale, limit int) TelegramMessage {
	var n cards.Notice
	cut := func(s string) string {
		d, k := cards.DisplayIn(s, l)
		n |= k
		d, _ = cards.CutIn(cards.OneLine(d), limit, l)
		return d
	}
	var t tgText
	if len(grants) == 0 {
		t.text(l.T("grants.none"))
		return TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
	}
	t.tag("b", l.T("grants.title"))
	t.nl()
	for _, g := range grants {
		t.nl()
		t.tag("b", fmt.Sprintf("#%d", g.ID))
		t.text(" " + l.T("grants.on", cut(g.Capability)) + " ")
		t.tag("code", cut(g.Target))
		t.nl()
		t.text(l.T("grants.for_by", cut(g.Channel+"/"+g.SenderID), cut(cards.DisplayName(g.GrantedBy))))
		if g.SessionID != "" {
			t.text(" · " + l.T("grants.session", cut(g.Agent), cut(g.SessionID)))
		} else if g.Agent != "" {
			t.text(" · " + l.T("grants.agent_only", cut(g.Agent)))
		}
		if g.ExpiresAt != nil {
			t.text(" · " + l.T("grants.until", l.Date(*g.ExpiresAt)))
		}
		if g.LastUsedAt != nil {
			t.text(" · " + l.T("grants.last_used", l.Date(*g.LastUsedAt)))
		} else {
			t.text(" · " + l.T("grants.never_used"))
		}
		t.nl()
	}
	for _, w := range n.Warnings(l) {
		t.nl()
		t.tag("b", w)
	}
	if n != 0 {
		t.nl()
	}
	if more {
		t.nl()
		t.text(l.T("grants.more_before") + " ")
		t.tag("code", "gateway policy grants")
		t.text(" " + l.T("grants.more_after"))
		t.nl()
	}
	return TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
}

// TelegramMarkup writes a digest or a notification for Telegram's HTML
// parse mode: everything escaped, a target in <code>.
var TelegramMarkup cards.Markup = telegramMarkup{}

type telegramMarkup struct{}

func (telegramMarkup) Escape(s string) string { return html.EscapeString(s) }
func (telegramMarkup) Code(s string) string   { return "<code>" + html.EscapeString(s) + "</code>" }
func (telegramMarkup) Link(u string) string   { return html.EscapeString(u) }

// TelegramAudit is the answer to /history: the rows (oldest first) under
// a title, HTML-escaped, within Telegram's message limit (the oldest rows
// give way first).
func TelegramAudit(rows []storage.AuditEvent, scope approvals.AuditScope, l locale.Locale) TelegramMessage {
	what := cards.AuditWhat(scope, l)
	for {
		var t tgText
		if len(rows) == 0 {
			t.text(l.T("audit.none", what))
			return TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
		}
		t.tag("b", l.T("audit.title", len(rows), what))
		t.text(" " + l.T("audit.oldest_first"))
		for _, e := range rows {
			t.nl()
			t.text(fmt.Sprintf("#%d %s — ", e.Seq, l.Clock(e.At)))
			t.tag("b", e.Event)
			t.text(" " + l.T("audit.by") + " " + cards.AuditActor(e.Actor, l))
			if facts := cards.AuditFactsText(e, l); facts != "" {
				t.text(" · " + facts)
			}
		}
		m := TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
		if cards.UTF16Len(m.Plain) <= TelegramMaxText || len(rows) == 1 {
			return m
		}
		rows = rows[1:]
	}
}
