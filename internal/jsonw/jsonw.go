// Package jsonw appends JSON values to a byte slice, byte for byte as
// encoding/json writes them with HTML escaping off (json.Encoder with
// SetEscapeHTML(false)), or on (json.Marshal: the HTML variants). It serves the few types written on every request,
// where encoding/json's reflection was a tenth of the handler's time; the
// tests hold the output to encoding/json's.
package jsonw

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// String appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, and
// U+2028 and U+2029 are escaped, as encoding/json does.
func String(b []byte, s string) []byte { return appendString(b, s, false) }

// StringHTML is String with <, > and & escaped as well, as json.Marshal
// writes them.
func StringHTML(b []byte, s string) []byte { return appendString(b, s, true) }

// safe and htmlSafe say which ASCII bytes a JSON string holds as they
// are: one load per byte, where the comparisons were up to six.
var safe, htmlSafe = asciiSafe(false), asciiSafe(true)

func asciiSafe(html bool) (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&')
	}
	return t
}

func appendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	plain := &safe
	if html {
		plain = &htmlSafe
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '<', '>', '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
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
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
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
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Strings appends a JSON array of strings; nil is null.
func Strings(b []byte, s []string) []byte { return appendStrings(b, s, false) }

// StringsHTML is Strings with StringHTML's escapes.
func StringsHTML(b []byte, s []string) []byte { return appendStrings(b, s, true) }

func appendStrings(b []byte, s []string, html bool) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, v, html)
	}
	return append(b, ']')
}

// Time appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted). Years outside 0…9999, which MarshalJSON refuses,
// do not occur in what the gateway writes.
func Time(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// TimePtr appends *t, or null.
func TimePtr(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return Time(b, *t)
}

// Float appends a finite float64 as encoding/json does: the shortest
// decimal that reads back the same, in exponent form below 1e-6 and from
// 1e21 up.
func Float(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// Bool appends true or false.
func Bool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// Key appends a member's name and colon, after a comma unless first.
// name must need no escaping.
func Key(b []byte, name string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}
