package vaglio

import (
	"strconv"
	"unicode/utf8"
)

// The decision log's line is written by hand rather than by json.Marshal:
// reflection over the record cost about a twentieth of a decision. The
// bytes are those json.Marshal writes for logLine, field for field (see
// TestLogLine_SameAsMarshal), so the encoding stays standard JSON.

// appendTo appends the line's JSON object to b.
func (l *logLine) appendTo(b []byte) []byte {
	b = append(b, `{"approved":`...)
	b = strconv.AppendBool(b, l.Approved)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, l.Reason)
	b = append(b, `,"ts":`...)
	b = l.TS.appendTo(b)
	b = append(b, `,"judge_kind":`...)
	b = appendJSONString(b, l.JudgeKind)
	b = append(b, `,"score":`...)
	b = l.Score.appendTo(b)
	b = append(b, `,"blocked_by":`...)
	if l.BlockedBy == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *l.BlockedBy)
	}
	b = append(b, `,"intent":`...)
	b = appendJSONString(b, l.Intent)
	b = append(b, `,"executor":`...)
	b = appendJSONString(b, l.Executor)
	b = append(b, `,"args_keys":`...)
	b = appendJSONStrings(b, l.ArgsKeys)
	b = append(b, `,"context_keys":`...)
	b = appendJSONStrings(b, l.ContextKeys)
	b = append(b, `,"agent":`...)
	b = appendJSONString(b, l.Agent)
	b = append(b, `,"capability":`...)
	b = appendJSONString(b, l.Capability)
	b = append(b, `,"arg_key_paths":`...)
	b = appendJSONStrings(b, l.ArgKeyPaths)
	return append(b, '}')
}

// appendTo writes f as MarshalJSON does.
func (f pyFloat) appendTo(b []byte) []byte {
	start := len(b)
	b = strconv.AppendFloat(b, float64(f), 'f', -1, 64)
	for _, c := range b[start:] {
		if c == '.' {
			return b
		}
	}
	return append(b, '.', '0')
}

// appendJSONStrings writes a list as json.Marshal does (null for nil).
func appendJSONStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s quoted as json.Marshal does: <, > and & as
// \u escapes, control characters escaped, invalid UTF-8 as U+FFFD, and
// U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
