package hooks

import (
	"fmt"
	"strings"
)

// jsSpace reports whether r is white space to a JavaScript regular
// expression's \s (ECMAScript WhiteSpace and LineTerminator): it has
// U+FEFF, which Go's unicode.IsSpace has not, and lacks U+0085, which Go's
// has.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff:
		return true
	}
	return 0x2000 <= r && r <= 0x200a
}

// promptURLs are the URLs Gemini CLI's web_fetch reads in its prompt, the
// way its parsePrompt reads them (packages/core/src/tools/web-fetch.ts):
// the prompt split on JavaScript white space, and every piece that holds
// "://" read as a whole URL, quotes, brackets and user info included
// ("https://docs.python.org'@evil.example/" reaches evil.example). Gemini
// CLI refuses the whole call when one such piece is no http or https URL;
// here that is an error too, as is a piece whose host the gateway cannot
// read, so nothing is ever skipped.
func promptURLs(prompt string) ([]string, error) {
	var out []string
	for _, tok := range strings.FieldsFunc(prompt, jsSpace) {
		if !strings.Contains(tok, "://") {
			continue
		}
		scheme, _, _ := strings.Cut(tok, ":")
		if s := strings.ToLower(scheme); s != "http" && s != "https" {
			return nil, fmt.Errorf("%q in prompt is no http or https URL", strip(tok))
		}
		if hostOf(tok) == "" {
			return nil, fmt.Errorf("%q in prompt names no host the gateway can read", strip(tok))
		}
		out = append(out, tok)
	}
	return out, nil
}
