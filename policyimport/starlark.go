package policyimport

import (
	"fmt"
	"strconv"
	"strings"
)

// call is one top-level call of a rules file: name(kw = value, …).
type call struct {
	name string
	kw   map[string]any    // a string, a []any, a bool, or nil
	src  map[string]string // each value as written, on one line
	line int
}

// parseStarlark reads the subset of Starlark Codex's rules files use:
// top-level calls with keyword arguments whose values are strings, lists,
// True, False, None or numbers; # comments. Anything else is an error
// naming its line.
func parseStarlark(data []byte) ([]call, error) {
	p := &starParser{src: string(data), line: 1}
	var out []call
	for {
		p.space()
		if p.pos >= len(p.src) {
			return out, nil
		}
		line := p.line
		name := p.ident()
		if name == "" {
			return nil, p.errf("want a call such as prefix_rule(…)")
		}
		p.space()
		if !p.eat('(') {
			return nil, p.errf("want ( after %s", name)
		}
		c := call{name: name, kw: map[string]any{}, src: map[string]string{}, line: line}
		for {
			p.space()
			if p.eat(')') {
				break
			}
			key := p.ident()
			p.space()
			if key == "" || !p.eat('=') {
				return nil, p.errf("want name = value in %s(…)", name)
			}
			p.space()
			from := p.pos
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			c.kw[key] = v
			c.src[key] = strings.Join(strings.Fields(stripHashComments(p.src[from:p.pos])), " ")
			p.space()
			if !p.eat(',') && !strings.HasPrefix(p.src[p.pos:], ")") {
				return nil, p.errf("want , or ) in %s(…)", name)
			}
		}
		out = append(out, c)
	}
}

type starParser struct {
	src       string
	pos, line int
}

func (p *starParser) errf(format string, args ...any) error {
	return fmt.Errorf("line %d: "+format, append([]any{p.line}, args...)...)
}

func (p *starParser) eat(c byte) bool {
	if p.pos < len(p.src) && p.src[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// space skips white space and comments, counting lines.
func (p *starParser) space() {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *starParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || p.pos > start && c >= '0' && c <= '9' {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

func (p *starParser) value() (any, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, p.errf("unexpected end of file")
	}
	switch c := p.src[p.pos]; {
	case c == '"' || c == '\'':
		return p.str()
	case c == '[':
		p.pos++
		var list []any
		for {
			p.space()
			if p.eat(']') {
				return list, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			p.space()
			if !p.eat(',') && !strings.HasPrefix(p.src[p.pos:], "]") {
				return nil, p.errf("want , or ] in a list")
			}
		}
	case c >= '0' && c <= '9' || c == '-':
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("0123456789.-", p.src[p.pos]) >= 0 {
			p.pos++
		}
		return p.src[start:p.pos], nil
	}
	switch id := p.ident(); id {
	case "True":
		return true, nil
	case "False":
		return false, nil
	case "None":
		return nil, nil
	}
	return nil, p.errf("want a string, a list, True, False, None or a number")
}

// str reads a quoted string ('…', "…", or the triple-quoted forms) with
// Starlark's escapes.
func (p *starParser) str() (string, error) {
	q := p.src[p.pos : p.pos+1]
	if strings.HasPrefix(p.src[p.pos:], q+q+q) {
		q = q + q + q
	}
	p.pos += len(q)
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", p.errf("a string that does not end")
		}
		if strings.HasPrefix(p.src[p.pos:], q) {
			p.pos += len(q)
			return b.String(), nil
		}
		c := p.src[p.pos]
		switch {
		case c == '\n' && len(q) == 1:
			return "", p.errf("a line break inside a string")
		case c == '\\' && p.pos+1 < len(p.src):
			p.pos++
			e := p.src[p.pos]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'x':
				if p.pos+2 >= len(p.src) {
					return "", p.errf("a bad \\x escape")
				}
				n, err := strconv.ParseUint(p.src[p.pos+1:p.pos+3], 16, 8)
				if err != nil {
					return "", p.errf("a bad \\x escape")
				}
				b.WriteByte(byte(n))
				p.pos += 2
			default:
				return "", p.errf("an escape \\%c the import does not read", e)
			}
			p.pos++
		default:
			if c == '\n' {
				p.line++
			}
			b.WriteByte(c)
			p.pos++
		}
	}
}

// stripHashComments drops # comments (outside strings) from a call's text.
func stripHashComments(s string) string {
	var b strings.Builder
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(s) {
				b.WriteByte(c)
				i++
				c = s[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			c = '\n'
		}
		b.WriteByte(c)
	}
	return b.String()
}
