// A path.Match pattern parsed once, for the pattern components of the
// compiled path matcher: the same answers as path.Match, without parsing
// the pattern again for every name it is tried on.

package vaglio

import (
	"path"
	"strings"
	"unicode/utf8"
)

// globPat is a valid path.Match pattern, split as path.Match splits it:
// chunks separated by runs of '*'.
type globPat struct {
	chunks []globChunk
	// first has bit b set when a non-empty name starting with byte b may
	// match; minLen is the fewest bytes a matching name has.
	first  [4]uint64
	minLen int
}

// globChunk is the text after a run of stars (or at the start) up to the
// next star.
type globChunk struct {
	star  bool
	items []globItem
	lit   string // the chunk's bytes when every item is a literal byte, else ""
}

// globItem is one element of a chunk: a literal byte, '?' (one rune, not
// '/') or a character class (one rune in or, negated, outside ranges).
type globItem struct {
	kind   globKind
	b      byte
	neg    bool
	ranges []runeRange
}

type globKind uint8

const (
	globByte globKind = iota
	globAnyRune
	globClass
)

type runeRange struct{ lo, hi rune }

var allBytes = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// compileGlob parses pat; ok is false for a pattern path.Match calls
// malformed, and for escapes ('\'), which the rules never use: those stay
// with path.Match.
func compileGlob(pat string) (g *globPat, ok bool) {
	if _, err := path.Match(pat, ""); err != nil || strings.Contains(pat, `\`) {
		return nil, false
	}
	g = &globPat{}
	for rest := pat; rest != ""; {
		var c globChunk
		for rest != "" && rest[0] == '*' {
			rest, c.star = rest[1:], true
		}
		for rest != "" && rest[0] != '*' {
			var it globItem
			switch rest[0] {
			case '?':
				it.kind, rest = globAnyRune, rest[1:]
			case '[':
				it.kind, rest = globClass, rest[1:]
				if rest != "" && rest[0] == '^' {
					it.neg, rest = true, rest[1:]
				}
				for {
					if rest == "" {
						return nil, false
					}
					if rest[0] == ']' && len(it.ranges) > 0 {
						rest = rest[1:]
						break
					}
					lo, n := utf8.DecodeRuneInString(rest)
					if lo == utf8.RuneError && n == 1 || rest[0] == '-' || rest[0] == ']' {
						return nil, false
					}
					rest = rest[n:]
					hi := lo
					if rest != "" && rest[0] == '-' {
						rest = rest[1:]
						if rest == "" || rest[0] == '-' || rest[0] == ']' {
							return nil, false
						}
						hi, n = utf8.DecodeRuneInString(rest)
						if hi == utf8.RuneError && n == 1 {
							return nil, false
						}
						rest = rest[n:]
					}
					it.ranges = append(it.ranges, runeRange{lo, hi})
				}
			default:
				it.kind, it.b, rest = globByte, rest[0], rest[1:]
			}
			c.items = append(c.items, it)
		}
		c.lit = chunkLiteral(c.items)
		g.chunks = append(g.chunks, c)
		g.minLen += len(c.items)
	}
	g.first = allBytes
	if len(g.chunks) > 0 && !g.chunks[0].star && len(g.chunks[0].items) > 0 {
		g.first = g.chunks[0].items[0].firstBytes()
	}
	return g, true
}

func chunkLiteral(items []globItem) string {
	b := make([]byte, 0, len(items))
	for _, it := range items {
		if it.kind != globByte {
			return ""
		}
		b = append(b, it.b)
	}
	return string(b)
}

// firstBytes are the first bytes of the names the item matches the start
// of: exact for a byte and for a class of ASCII runes, every byte else.
func (it globItem) firstBytes() (set [4]uint64) {
	switch {
	case it.kind == globByte:
		set[it.b/64] |= 1 << (it.b % 64)
		return set
	case it.kind == globClass && !it.neg:
		for _, r := range it.ranges {
			if r.hi >= utf8.RuneSelf {
				return allBytes
			}
			for c := r.lo; c <= r.hi; c++ {
				set[c/64] |= 1 << (c % 64)
			}
		}
		return set
	}
	return allBytes
}

// mayMatch is the cheap test before match: false only when name cannot
// match.
func (g *globPat) mayMatch(name string) bool {
	if len(name) < g.minLen {
		return false
	}
	return name == "" || g.first[name[0]/64]&(1<<(name[0]%64)) != 0
}

// match is path.Match(pat, name) for the pattern g was compiled from.
func (g *globPat) match(name string) bool {
	for i := range g.chunks {
		c := &g.chunks[i]
		last := i == len(g.chunks)-1
		if c.star && len(c.items) == 0 {
			// A trailing star matches the rest unless it holds a '/'.
			return strings.IndexByte(name, '/') < 0
		}
		if t, ok := c.matchAt(name); ok && (t == "" || !last) {
			name = t
			continue
		}
		if !c.star {
			return false
		}
		// The star may take bytes up to the first '/', never past it:
		// the chunk is tried at every start after this one up to there,
		// the leftmost that fits winning.
		stop := strings.IndexByte(name, '/')
		if stop < 0 {
			stop = len(name)
		}
		if stop < 1 {
			return false
		}
		if c.lit != "" {
			if last {
				s := len(name) - len(c.lit)
				if s < 1 || s > stop || name[s:] != c.lit {
					return false
				}
				return true
			}
			j := strings.Index(name[1:], c.lit)
			if j < 0 || j+1 > stop {
				return false
			}
			name = name[j+1+len(c.lit):]
			continue
		}
		found := false
		for s := 1; s <= stop; s++ {
			if t, ok := c.matchAt(name[s:]); ok && (t == "" || !last) {
				name, found = t, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return name == ""
}

// matchAt matches the chunk at the start of s, returning what follows.
func (c *globChunk) matchAt(s string) (rest string, ok bool) {
	if c.lit != "" {
		if !strings.HasPrefix(s, c.lit) {
			return "", false
		}
		return s[len(c.lit):], true
	}
	for i := range c.items {
		if s == "" {
			return "", false
		}
		it := &c.items[i]
		switch it.kind {
		case globByte:
			if s[0] != it.b {
				return "", false
			}
			s = s[1:]
		case globAnyRune:
			if s[0] == '/' {
				return "", false
			}
			_, n := utf8.DecodeRuneInString(s)
			s = s[n:]
		case globClass:
			r, n := utf8.DecodeRuneInString(s)
			s = s[n:]
			in := false
			for _, rg := range it.ranges {
				if rg.lo <= r && r <= rg.hi {
					in = true
					break
				}
			}
			if in == it.neg {
				return "", false
			}
		}
	}
	return s, true
}
