package cards

import (
	"html"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// MaxBulletinArg bounds, in characters, each string a bulletin names.
const MaxBulletinArg = 200

// Bulletin is an approvals.Bulletin as a messenger shows it: its sentence
// in the locale, each argument through Display and cut.
type Bulletin struct {
	parts []string // the sentence's own text around the arguments
	args  []string
}

// NewBulletin builds the neutral fields of b's message.
func NewBulletin(b approvals.Bulletin, l locale.Locale) Bulletin {
	marks := make([]any, len(b.Args))
	for i := range marks {
		marks[i] = "\x00"
	}
	out := Bulletin{parts: strings.Split(l.T(b.Key, marks...), "\x00")}
	for _, a := range b.Args {
		cut, _ := CutIn(SafeIn(a, l), MaxBulletinArg, l)
		out.args = append(out.args, cut)
	}
	return out
}

// render writes the message; esc escapes the sentence's own text, code an
// argument.
func (b Bulletin) render(esc, code func(string) string) string {
	var s strings.Builder
	for i, p := range b.parts {
		s.WriteString(esc(p))
		if i < len(b.parts)-1 && i < len(b.args) {
			s.WriteString(code(b.args[i]))
		}
	}
	return s.String()
}

// Text is the message as plain text.
func (b Bulletin) Text() string {
	id := func(s string) string { return s }
	return b.render(id, id)
}

// TelegramHTML is the message for Telegram's HTML parse mode, the
// arguments in <code> (no link, no mention).
func (b Bulletin) TelegramHTML() string {
	return b.render(html.EscapeString, func(s string) string { return "<code>" + html.EscapeString(s) + "</code>" })
}

// SlackText is the message for a Slack post without markdown.
func (b Bulletin) SlackText() string { return EscapeMrkdwn(b.Text()) }

// DiscordText is the message for Discord's markdown, the arguments in
// code spans (no mention, role or channel pill).
func (b Bulletin) DiscordText() string { return DiscordText(b.render(EscapeDiscord, discordCode)) }
