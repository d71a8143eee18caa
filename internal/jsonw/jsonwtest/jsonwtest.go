// Package jsonwtest helps hold hand-written JSON to encoding/json's.
package jsonwtest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// EncodingJSON is what the API's writeJSON writes for v (a json.Encoder
// with HTML escaping off), without its newline.
func EncodingJSON(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// RandomString mixes what JSON strings must escape or replace: quotes,
// backslashes, control characters, HTML characters, U+2028/U+2029, other
// runes and bytes that are not UTF-8.
func RandomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "9", " ", `"`, `\`, "/", "<", ">", "&", "\x00", "\x01", "\b", "\f", "\n", "\r", "\t",
		"\x1f", "\x7f", "é", "€", "𝄞", "\u2028", "\u2029", "\ufffd", "\xff", "\xc3", "\xe2\x80", "\xed\xa0\x80", "›"}
	var b []byte
	for range r.IntN(12) {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}
