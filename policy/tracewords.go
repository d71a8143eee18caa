package policy

import (
	"strconv"
	"strings"
)

// The words of a decision's trace and reason on its common path, written
// into one buffer and cut in parts: a decision allocates once for all of
// them when the room it reserved first holds them.

// traceWords is that buffer. A string cut from it stays as it is: later
// words are appended after it, never over it.
type traceWords struct{ b strings.Builder }

// grantRoom is how many bytes a grant's words take besides the grant's
// target, its id (twice, up to 20 digits each), the channel and sender.
const grantRoom = len("allowed by grant # ()") + len("grant # for / covers the target") + 2*20

// profileAndTable writes the details of the profile step ("agent
// \"metnos\": requested default, ceiling Supervised, effective
// Supervised") and of the table step ("fs:read at Supervised"), with room
// for more bytes after them.
func (w *traceWords) profileAndTable(agent string, requested, ceiling, level Level, capability string, room int) (profile, table string) {
	var q [64]byte
	quoted := appendQuoted(q[:0], agent)
	req, ceil, eff := levelOr(requested, "default"), ceiling.String(), level.String()
	b := &w.b
	start := b.Len()
	b.Grow(len("agent : requested , ceiling , effective ") + len(quoted) + len(req) + len(ceil) + len(eff) +
		len(capability) + len(" at ") + len(eff) + room)
	b.WriteString("agent ")
	b.Write(quoted)
	b.WriteString(": requested ")
	b.WriteString(req)
	b.WriteString(", ceiling ")
	b.WriteString(ceil)
	b.WriteString(", effective ")
	b.WriteString(eff)
	n := b.Len()
	b.WriteString(capability)
	b.WriteString(" at ")
	b.WriteString(eff)
	s := b.String()
	return s[start:n], s[n:]
}

// grant writes the reason of a decision a grant allowed ("allowed by
// grant #12 (/home/r/*)") and the detail of its grants step ("grant #12
// for telegram/roberto covers the target").
func (w *traceWords) grant(id int64, target, channel, sender string) (reason, detail string) {
	var d [20]byte
	num := strconv.AppendInt(d[:0], id, 10)
	b := &w.b
	start := b.Len()
	b.Grow(len("allowed by grant # ()") + len(num) + len(target) +
		len("grant # for / covers the target") + len(num) + len(channel) + len(sender))
	b.WriteString("allowed by grant #")
	b.Write(num)
	b.WriteString(" (")
	b.WriteString(target)
	b.WriteString(")")
	n := b.Len()
	b.WriteString("grant #")
	b.Write(num)
	b.WriteString(" for ")
	b.WriteString(channel)
	b.WriteString("/")
	b.WriteString(sender)
	b.WriteString(" covers the target")
	s := b.String()
	return s[start:n], s[n:]
}

// appendQuoted is strconv.AppendQuote, which for printable ASCII without
// '"' or '\\' only adds the quotes: such a name is copied as it is.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
