package cards

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/metnos/gateway/locale"
)

// What a person reads on a card must be what the agent sent, character for
// character, or say plainly where it is not. Display is the one function
// every surface passes agent-supplied text through (targets, intents,
// summaries, executors, agent ids, notes, arg keys, grant targets):
//
//   - A character that cannot be seen or that changes how the text around
//     it reads is shown as an escape, ⟦U+202E⟧: control characters other
//     than line feed and tab, every format character (Unicode Cf: the bidi
//     controls U+202A–U+202E and U+2066–U+2069, the zero-width U+200B–U+200F,
//     U+2060, U+FEFF, the tag characters…), line and paragraph separators,
//     every space other than U+0020 (a no-break space splits no shell
//     word), default-ignorable code points (Hangul fillers, variation
//     selectors), blank-looking U+2800, and unassigned code points.
//   - A byte that is not UTF-8 is shown as ⟦0xFF⟧.
//   - The brackets ⟦ and ⟧ themselves are escaped, so every escape on a
//     card is the gateway's, never a look-alike typed by the agent.
//   - A run of more than MaxBlankRun spaces or tabs (padding that pushes
//     the rest of a command out of sight) is shown as ⟦400 spaces⟧, and
//     more than two line breaks in a row as one break, ⟦9 line breaks⟧ and
//     another.
//
// Display reports what it did, so the card can carry its warning line.
// The words in the escapes are English; DisplayIn says them in a locale's
// language.
func Display(s string) (string, Notice) { return DisplayIn(s, locale.Locale{}) }

// DisplayIn is Display with the words of its escapes ("⟦400 spazi⟧") in
// l's language.
func DisplayIn(s string, l locale.Locale) (string, Notice) {
	var n Notice
	if plainText(s) {
		return s, n
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, "⟦0x%02X⟧", s[i])
			n |= NoticeEscaped
		case r == ' ' || r == '\t':
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if run := s[i:j]; len(run) > MaxBlankRun {
				b.WriteString(blankRun(run, l))
				n |= NoticeBlanks
			} else {
				b.WriteString(run)
			}
			i = j
			continue
		case r == '\n':
			j := i
			for j < len(s) && s[j] == '\n' {
				j++
			}
			if k := j - i; k > 2 {
				b.WriteString("\n⟦" + l.T("display.line_breaks", thousands(k, l)) + "⟧\n")
				n |= NoticeBlanks
			} else {
				b.WriteString(s[i:j])
			}
			i = j
			continue
		case hidden(r) || r == '⟦' || r == '⟧':
			fmt.Fprintf(&b, "⟦U+%04X⟧", r)
			n |= NoticeEscaped
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String(), n
}

// Safe is Display without the report, for lists that carry no warning.
func Safe(s string) string {
	out, _ := Display(s)
	return out
}

// SafeIn is Safe in l's language.
func SafeIn(s string, l locale.Locale) string {
	out, _ := DisplayIn(s, l)
	return out
}

// MaxBlankRun is the longest run of spaces and tabs shown as it is: enough
// for any indentation or alignment, far too little to hide anything.
const MaxBlankRun = 16

// Notice says what Display changed to make a text safe to show.
type Notice uint8

// The notices; a card carries a warning line for each one it needed.
const (
	NoticeEscaped Notice = 1 << iota // hidden characters shown as ⟦U+…⟧
	NoticeBlanks                     // long runs of blanks or line breaks counted
)

// The English warning lines of a card that needed them; Warnings gives
// them in the card's language ("card.warn_escaped", "card.warn_blanks").
const (
	WarnEscaped = "⚠ hidden characters shown as ⟦U+…⟧"
	WarnBlanks  = "⚠ long runs of blank space shown as ⟦N spaces⟧"
)

// Warnings are the warning lines for n in l's language, in a fixed order.
func (n Notice) Warnings(l locale.Locale) []string {
	var w []string
	if n&NoticeEscaped != 0 {
		w = append(w, l.T("card.warn_escaped"))
	}
	if n&NoticeBlanks != 0 {
		w = append(w, l.T("card.warn_blanks"))
	}
	return w
}

// plainText reports whether s is printable ASCII with single spaces and
// line breaks only: the common case, returned as it is.
func plainText(s string) bool {
	blanks, breaks := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if blanks++; blanks > MaxBlankRun {
				return false
			}
			breaks = 0
			continue
		case c == '\n':
			if breaks++; breaks > 2 {
				return false
			}
			blanks = 0
			continue
		case c < 0x20 || c >= 0x7f:
			return false
		}
		blanks, breaks = 0, 0
	}
	return true
}

// Hidden reports whether Display shows r as an escape (line feed and
// tab aside, which it keeps): for output that escapes in its own syntax,
// such as JSON's \u202e.
func Hidden(r rune) bool { return r != '\n' && r != '\t' && (hidden(r) || r == '⟦' || r == '⟧') }

// hidden reports whether r must be shown as an escape.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t' || r == ' ':
		return false
	case r < 0x20 || r == 0x7f:
		return true
	case r < 0x7f:
		return false
	case r == 0x2800: // BRAILLE PATTERN BLANK: a So that shows as nothing
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zl, unicode.Zp, unicode.Zs,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Noncharacter_Code_Point) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) // unassigned
}

// blankRun names a run of spaces and tabs: "⟦400 spaces⟧".
func blankRun(run string, l locale.Locale) string {
	key := "display.blanks"
	switch strings.Count(run, " ") {
	case len(run):
		key = "display.spaces"
	case 0:
		key = "display.tabs"
	}
	return "⟦" + l.T(key, thousands(len(run), l)) + "⟧"
}

// thousands writes n with the language's thousands separator: 10,000
// (10.000 in Italian).
func thousands(n int, l locale.Locale) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	sep := l.T("number.thousands")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + sep + s[i:]
	}
	return s
}

// Cut shortens an already displayed text to at most max characters
// (runes), keeping its head and its tail, the end of a command being where
// the dangerous part of a padded one hides, and putting in the middle a
// marker that says how many characters were cut. It never splits an
// escape. The second result is the number of characters cut (0 when s
// fits).
func Cut(s string, max int) (string, int) { return CutIn(s, max, locale.Locale{}) }

// CutIn is Cut with its marker in l's language.
func CutIn(s string, max int, l locale.Locale) (string, int) {
	total := utf8.RuneCountInString(s)
	if total <= max {
		return s, 0
	}
	// The marker's own length depends on the count; size it for the worst.
	room := max - utf8.RuneCountInString(cutMarker(total, l))
	if room < 2 {
		room = 2
	}
	head, tail := RunePrefix(s, room-room/2), runeSuffix(s, room/2)
	// Never split an escape: an open ⟦ in the head or an unopened ⟧ in
	// the tail moves the cut to the escape's edge.
	if i, j := strings.LastIndex(head, "⟦"), strings.LastIndex(head, "⟧"); i > j {
		head = head[:i]
	}
	if i, j := strings.Index(tail, "⟧"), strings.Index(tail, "⟦"); i >= 0 && (j < 0 || i < j) {
		tail = tail[i+len("⟧"):]
	}
	n := total - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	return head + cutMarker(n, l) + tail, n
}

// cutMarker stands in the middle of a cut text.
func cutMarker(n int, l locale.Locale) string {
	return " ⟦… " + l.T("display.cut", thousands(n, l)) + " …⟧ "
}

// RunePrefix is the first n runes of s.
func RunePrefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// runeSuffix is the last n runes of s.
func runeSuffix(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}
