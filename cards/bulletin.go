package cards

import (
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

// Render writes the message in m, the arguments set apart (Code).
func (b Bulletin) Render(m Markup) string {
	var s strings.Builder
	for i, p := range b.parts {
		s.WriteString(m.Escape(p))
		if i < len(b.parts)-1 && i < len(b.args) {
			s.WriteString(m.Code(b.args[i]))
		}
	}
	return s.String()
}

// Text is the message as plain text.
func (b Bulletin) Text() string { return b.Render(Plain) }
