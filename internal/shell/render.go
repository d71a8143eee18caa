// How a word reads after the shell expands it: its alternatives (braces
// expanded, quotes removed), with what only run time knows as "*".

package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// A quoting context: where a literal's backslashes and glob characters
// mean what they mean.
type quoting uint8

const (
	unquoted quoting = iota
	dquoted
	heredoc // an unquoted here-document's body: like dquoted, but " is plain
)

// alt is one alternative of a word after brace expansion.
type alt struct {
	text   string
	static bool
}

// render turns a word into its alternatives.
func render(word *syntax.Word, ctx quoting) []alt {
	parts := word.Parts
	if ctx == unquoted {
		cp := &syntax.Word{Parts: append([]syntax.WordPart(nil), word.Parts...)}
		if syntax.SplitBraces(cp) {
			parts = cp.Parts
		}
	}
	out := []alt{{static: true}}
	for _, p := range parts {
		out = cross(out, renderPart(p, ctx))
	}
	return out
}

// cross appends each of next to each of prev; past maxAlternatives the
// word becomes a single pattern.
func cross(prev, next []alt) []alt {
	if len(prev)*len(next) > maxAlternatives {
		return []alt{{text: "*"}}
	}
	out := make([]alt, 0, len(prev)*len(next))
	for _, a := range prev {
		for _, b := range next {
			out = append(out, join(a, b))
		}
	}
	return out
}

// join concatenates two alternatives. A static one joined to a pattern
// has its glob characters escaped: it was a value, now part of a pattern.
func join(a, b alt) alt {
	switch {
	case a.static && b.static:
		return alt{text: a.text + b.text, static: true}
	case a.static:
		return alt{text: escapeGlob(a.text) + b.text}
	case b.static:
		return alt{text: a.text + escapeGlob(b.text)}
	}
	return alt{text: a.text + b.text}
}

func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

var runtime = []alt{{text: "*"}}

func renderPart(p syntax.WordPart, ctx quoting) []alt {
	switch p := p.(type) {
	case *syntax.Lit:
		return []alt{renderLit(p.Value, ctx)}
	case *syntax.SglQuoted:
		if !p.Dollar {
			return []alt{{text: p.Value, static: true}}
		}
		s, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{p}})
		if err != nil {
			return runtime
		}
		return []alt{{text: s, static: true}}
	case *syntax.DblQuoted:
		if p.Dollar {
			return runtime // $"…": translated at run time
		}
		out := []alt{{text: "", static: true}}
		for _, q := range p.Parts {
			out = cross(out, renderPart(q, dquoted))
		}
		return out
	case *syntax.BraceExp:
		if p.Sequence {
			return runtime
		}
		var out []alt
		for _, e := range p.Elems {
			out = append(out, render(e, unquoted)...)
			if len(out) > maxAlternatives {
				return runtime
			}
		}
		return out
	}
	// $x, ${x…}, $(…), `…`, $((…)), <(…), @(…): known when it runs.
	return runtime
}

// renderLit removes a literal's quoting backslashes as bash does in ctx,
// and tells a literal with unquoted glob characters from a plain one.
func renderLit(v string, ctx quoting) alt {
	if !strings.ContainsAny(v, `\*?[`) {
		return alt{text: v, static: true}
	}
	var text, pat strings.Builder
	glob := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			n := v[i+1]
			switch {
			case n == '\n':
				i++ // a line continuation
				continue
			case ctx == unquoted,
				ctx == dquoted && strings.IndexByte("$`\"\\", n) >= 0,
				ctx == heredoc && strings.IndexByte("$`\\", n) >= 0:
				i++
				text.WriteByte(n)
				pat.WriteString(escapeGlob(string(n)))
				continue
			}
		}
		if ctx == unquoted && (c == '*' || c == '?' || c == '[' && strings.IndexByte(v[i+1:], ']') > 0) {
			glob = true
			text.WriteByte(c)
			pat.WriteByte(c)
			continue
		}
		text.WriteByte(c)
		pat.WriteString(escapeGlob(string(c)))
	}
	if glob {
		if _, err := path.Match(pat.String(), ""); err != nil {
			return alt{text: "*"} // a pattern path.Match cannot read: anything
		}
		return alt{text: pat.String()}
	}
	return alt{text: text.String(), static: true}
}
