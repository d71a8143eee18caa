package discord

import (
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
)

// Discord's message limits (https://discord.com/developers/docs/resources/message#create-message,
// https://discord.com/developers/docs/interactions/message-components).
// A message over one of them is refused whole, so the renderer cuts the
// card's fields until it fits.
const (
	// DiscordMaxContent is the limit of a message's content, in characters.
	DiscordMaxContent = 2000
	// DiscordMaxRowButtons is how many buttons one action row holds.
	DiscordMaxRowButtons = 5
	// DiscordMaxRows is how many action rows one message holds.
	DiscordMaxRows = 5
	// DiscordMaxCustomID is the limit of a component's custom_id.
	DiscordMaxCustomID = 100
	// DiscordMaxLabel is the limit of a button's label.
	DiscordMaxLabel = 80
)

// discordFieldFloor is the shortest a field gets while the card is fitted.
const discordFieldFloor = 48

// DiscordMessage is a card as a Discord message: its markdown content and
// its action rows (empty, not nil, for a finished card, so an edit removes
// the buttons). The custom_id of each button is the same callback data as
// Telegram's (Encode*), decoded with Decode: the request id and the choice,
// nothing else.
type DiscordMessage struct {
	Content    string
	Components []discordgo.MessageComponent
}

// discordEscaper backslash-escapes every character Discord's markdown
// gives meaning to, and those of mentions (<@id>, <@&id>, <#id>,
// @everyone), emoji and timestamps (<:name:id>, <t:…>): an escaped
// character is shown as itself and starts nothing.
var discordEscaper = func() *strings.Replacer {
	var pairs []string
	for _, c := range "\\*_~`|>#-[]()<@:!.+=/" {
		pairs = append(pairs, string(c), "\\"+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// EscapeDiscord shows s as plain text in a Discord message: no
// formatting, link, mention, role, channel or emoji can come out of it.
func EscapeDiscord(s string) string { return discordEscaper.Replace(s) }

// discordCode shows a displayed text in an inline code span, where Discord
// draws no markdown and no mention: folded to one line, a backtick (which
// would end the span) shown as ⟦U+0060⟧.
func discordCode(s string) string {
	s = strings.ReplaceAll(cards.OneLine(s), "`", "⟦U+0060⟧")
	if strings.TrimSpace(s) == "" {
		s = "—"
	}
	return "`" + s + "`"
}

// discordLink shows an absolute URL as a link without an embed.
func discordLink(u string) string { return "<" + strings.ReplaceAll(u, ">", "%3E") + ">" }

// discordBlock shows a multi-line command as a code block, line breaks and
// all; a backtick is shown as ⟦U+0060⟧ so no fence can close it early.
func discordBlock(s string) string {
	return "```\n" + strings.ReplaceAll(s, "`", "⟦U+0060⟧") + "\n```"
}

// Discord renders c as a Discord message. Every agent string is shown in a
// code span or escaped (EscapeDiscord), and long fields are cut with a
// visible marker until the content fits DiscordMaxContent.
func Discord(c cards.Card) DiscordMessage {
	var content string
	for limit := DiscordMaxContent; ; limit = limit * 3 / 4 {
		content = renderDiscord(c, max(limit, discordFieldFloor))
		if cards.UTF16Len(content) <= DiscordMaxContent || limit <= discordFieldFloor {
			break
		}
	}
	return DiscordMessage{Content: content, Components: DiscordButtons(c)}
}

func renderDiscord(c cards.Card, limit int) string {
	l := c.Locale
	cs := cards.NewCuts(l)
	cut := func(field, s string) string { return cs.Cut(field, cards.OneLine(s), limit) }
	var b strings.Builder
	line := func(parts ...string) {
		for _, p := range parts {
			b.WriteString(p)
		}
		b.WriteString("\n")
	}
	head := ""
	if c.Pending {
		head = "🔐 "
	}
	line(head, "**", EscapeDiscord(cut(l.T("label.agent"), c.Title)), "**")
	for _, w := range c.Warnings() {
		line("**", EscapeDiscord(w), "**")
	}
	crit := l.T("label.not_critical")
	if c.Critical {
		crit = "⚠️ " + l.T("label.critical")
	}
	line(EscapeDiscord(l.T("label.agent")), ": ", discordCode(cut(l.T("label.agent"), c.Agent)), " · ",
		EscapeDiscord(l.T("label.level_lc")), " ", discordCode(c.Level))
	line(EscapeDiscord(l.T("label.capability")), ": ", discordCode(c.Capability), " · ", EscapeDiscord(crit))
	if target := cs.Cut(l.T("label.target"), c.Target, limit); strings.Contains(target, "\n") {
		line(EscapeDiscord(l.T("label.target")), ":")
		line(discordBlock(target))
	} else {
		line(EscapeDiscord(l.T("label.target")), ": ", discordCode(target))
	}
	if c.HostASCII != "" {
		line(EscapeDiscord(l.T("label.host")), ": ", discordCode(cut(l.T("label.host"), c.Host)), " → ", discordCode(c.HostASCII))
	}
	for _, f := range []struct{ label, value string }{
		{l.T("label.intent"), c.Intent}, {l.T("label.executor"), c.Executor}, {l.T("label.summary"), c.Summary},
	} {
		if f.value != "" {
			line(EscapeDiscord(f.label), ": ", discordCode(cut(f.label, f.value)))
		}
	}
	if c.HasVaglio {
		line(EscapeDiscord(l.T("label.vaglio")), ": ", EscapeDiscord(cut(l.T("label.vaglio"), c.Vaglio)))
	}
	b.WriteString("\n")
	if c.Pending {
		if c.AllowAlways {
			line("♾ ", EscapeDiscord(cut(l.T("button.allow_always"), c.GrantPreview)))
		} else {
			line("♾ ", EscapeDiscord(l.T("card.no_allow_always", c.Capability)))
		}
		line("⏳ ", EscapeDiscord(l.Expires(c.ExpiresAt)))
		if c.Escalation != "" {
			line(EscapeDiscord(cards.OneLine(c.Escalation)))
		}
		if c.Progress != "" {
			line("**", EscapeDiscord(cut(l.T("label.request"), c.Progress)), "**")
		}
		if c.StepUp {
			line("**", EscapeDiscord(cards.StepUpLine(c)), "**")
		}
	} else {
		line("**", EscapeDiscord(cut(l.T("label.request"), c.StatusLine)), "**")
	}
	if c.Note != "" {
		line("📝 ", EscapeDiscord(l.T("label.note")), ": ", discordCode(cut(l.T("label.note"), c.Note)))
	}
	if cs.Any() {
		page := discordCode(c.PageURL) + EscapeDiscord(l.T("card.not_linked"))
		if c.Linked() {
			page = discordLink(c.PageURL)
		}
		line(EscapeDiscord(cs.Line(l)), page)
	}
	b.WriteString(EscapeDiscord(l.T("label.request")) + " " + discordCode(c.RequestID))
	return b.String()
}

// discordButton is one button; custom ids are ours (Encode*), far under
// DiscordMaxCustomID.
func discordButton(label, customID string, style discordgo.ButtonStyle) discordgo.Button {
	return discordgo.Button{Label: fitLabel(label), CustomID: customID, Style: style}
}

// fitLabel cuts a label to DiscordMaxLabel characters with the marker.
func fitLabel(s string) string {
	s = cards.OneLine(s)
	if utf8.RuneCountInString(s) <= DiscordMaxLabel {
		return s
	}
	out, _ := cards.Cut(s, DiscordMaxLabel-12)
	for utf8.RuneCountInString(out) > DiscordMaxLabel {
		out = string([]rune(out)[:DiscordMaxLabel])
	}
	return out
}

// DiscordButtons are the action rows of a pending card (a step-up card:
// Confirm on the web page and Deny): Allow once and
// Allow always, then Allow for and Allow this session, then Deny alone so
// a hurried thumb does not hit it by mistake. Allow always opens the scope
// buttons (DiscordScopes) when there is more than one scope; with one it
// decides at once. A finished card has none (an empty list).
func DiscordButtons(c cards.Card) []discordgo.MessageComponent {
	rows := []discordgo.MessageComponent{}
	if c.StepUp && c.Pending {
		// An allow needs the approver's passkey: a link button to the web
		// page (Discord opens it and sends the gateway nothing), and Deny.
		if cards.ButtonURL(c.ConfirmURL) {
			rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
				discordgo.Button{Label: fitLabel(c.Locale.T("button.confirm_web")), Style: discordgo.LinkButton, URL: c.ConfirmURL}}})
		}
		return append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordButton(c.Locale.T("button.deny"), cards.EncodeDecision(c.RequestID, approvals.Deny), discordgo.DangerButton)}})
	}
	var allow, more, deny []discordgo.MessageComponent
	for _, b := range c.Buttons() {
		switch b.Decision {
		case approvals.AllowOnce:
			allow = append(allow, discordButton(b.Label, cards.EncodeDecision(c.RequestID, b.Decision), discordgo.SuccessButton))
		case approvals.AllowAlways:
			data := cards.EncodeScope(c.RequestID, 0)
			if len(c.Scopes) > 1 {
				data = cards.EncodeMenu(c.RequestID)
			}
			allow = append(allow, discordButton(b.Label, data, discordgo.PrimaryButton))
		case approvals.AllowFor:
			d, _ := approvals.ParseWhile(b.While)
			more = append(more, discordButton(b.Label, cards.EncodeAllowFor(c.RequestID, d), discordgo.SecondaryButton))
		case approvals.AllowSession:
			more = append(more, discordButton(b.Label, cards.EncodeDecision(c.RequestID, b.Decision), discordgo.SecondaryButton))
		case approvals.Deny:
			deny = append(deny, discordButton(b.Label, cards.EncodeDecision(c.RequestID, b.Decision), discordgo.DangerButton))
		}
	}
	for _, r := range [][]discordgo.MessageComponent{allow, more, deny} {
		for len(r) > 0 && len(rows) < DiscordMaxRows {
			n := min(len(r), DiscordMaxRowButtons)
			rows = append(rows, discordgo.ActionsRow{Components: r[:n]})
			r = r[n:]
		}
	}
	return rows
}

// DiscordScopes is a pending card with Allow always's scopes as buttons,
// narrowest first, each naming its pattern (cut to the label limit; the
// card's Target line shows the whole), then Back to the card's buttons.
func DiscordScopes(c cards.Card) DiscordMessage { return discordScopes(c, false) }

// DiscordEveryScopes is DiscordScopes for every agent of the principal,
// what its "For every agent" button opens (never on a guarded route).
func DiscordEveryScopes(c cards.Card) DiscordMessage { return discordScopes(c, true) }

func discordScopes(c cards.Card, every bool) DiscordMessage {
	m := Discord(c)
	if !c.Pending || !c.AllowAlways || c.StepUp || every && c.Guarded {
		return m
	}
	label, data := "button.scope", cards.EncodeScope
	if every {
		label, data = "button.scope_every", cards.EncodeEveryScope
	}
	var btns []discordgo.MessageComponent
	for i, sc := range c.Scopes {
		if len(btns) == (DiscordMaxRows-1)*DiscordMaxRowButtons {
			break
		}
		if sc == "*" {
			sc = c.Locale.T("card.any_target")
		}
		btns = append(btns, discordButton(c.Locale.T(label, sc), data(c.RequestID, i), discordgo.PrimaryButton))
	}
	var rows []discordgo.MessageComponent
	for len(btns) > 0 {
		n := min(len(btns), DiscordMaxRowButtons)
		rows = append(rows, discordgo.ActionsRow{Components: btns[:n]})
		btns = btns[n:]
	}
	last := []discordgo.MessageComponent{discordButton(c.Locale.T("button.back"), cards.EncodeBack(c.RequestID), discordgo.SecondaryButton)}
	if !every && !c.Guarded {
		last = append(last, discordButton(c.Locale.T("button.every_agent_menu"), cards.EncodeEveryMenu(c.RequestID),
			discordgo.SecondaryButton))
	}
	m.Components = append(rows, discordgo.ActionsRow{Components: last})
	return m
}

// DiscordText fits a reply to DiscordMaxContent, cut after its last whole
// line that fits (lines are balanced: no code span is left open) with "…".
func DiscordText(s string) string {
	if cards.UTF16Len(s) <= DiscordMaxContent {
		return s
	}
	out := cards.RunePrefix(s, DiscordMaxContent-4)
	for cards.UTF16Len(out) > DiscordMaxContent-4 {
		out = cards.RunePrefix(out, utf8.RuneCountInString(out)-100)
	}
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		return out[:i] + "\n…"
	}
	return "…"
}

// DiscordMarkup writes a digest for Discord's markdown: the digest's own
// text escaped, targets in code spans (no agent string draws a mention,
// role or channel pill), an absolute link in <…> (clickable, no embed), a
// bare path in a code span. DiscordText makes the whole safe to send.
var DiscordMarkup cards.Markup = discordMarkup{}

type discordMarkup struct{}

func (discordMarkup) Escape(s string) string { return EscapeDiscord(s) }
func (discordMarkup) Code(s string) string   { return discordCode(s) }
func (discordMarkup) Link(u string) string {
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return discordLink(u)
	}
	return discordCode(u)
}
