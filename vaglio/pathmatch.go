// A list of path rules compiled into one matcher: two tries of components
// (rules anchored at the root, and rules that match anywhere), walked once
// per path instead of once per rule and position.

package vaglio

import (
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// pathMatcher answers what the rules it was compiled from answer, read in
// order: the first rule of the list that matches the path (its name), at
// whatever position. Compiled once per list; read-only after, so safe for
// concurrent use.
type pathMatcher struct {
	names    []string // by rule index
	anchored *pathNode
	floating *pathNode
	// wordSafe says that no rule matches a relative path of one plain
	// word (see plainWord): an arg key or "utf-8" needs no walk.
	wordSafe bool
	// enter rules out, for a plain element, a walk from the floating
	// root at its position.
	enter *enterFilter
}

// pathNode is a trie node: the rules whose components so far lead here.
type pathNode struct {
	lits map[string]*pathNode // literal components (the common case), by name
	// litList is lits as a list, searched instead of the map when it is
	// short (see lit).
	litList []litEdge
	// firsts has bit b set when some name in lits starts with byte b (the
	// empty name counts as byte 0): most elements miss at this test.
	firsts [4]uint64
	globs  []*pathEdge // components that are patterns, in list order
	index  *edgeIndex  // globs by first and last byte, for a node with many
	all    []*pathEdge // every edge, for a glob in the input
	// end is the lowest index of a rule that matches once its components
	// reach this node, whole the lowest of a whole rule that matches only
	// if the path ends here; noRule when none. below is the lowest index
	// of any rule at this node or under it.
	end, whole, below int
}

// litEdge is one entry of pathNode.lits.
type litEdge struct {
	name string
	next *pathNode
}

// maxLitList is how many literals a node searches one by one; past it,
// a map lookup is quicker.
const maxLitList = 8

// lit is lits[in], or nil: ruled out by the first byte, or found in the
// short list or the map.
func (n *pathNode) lit(in string) *pathNode {
	if b := firstByte(in); n.firsts[b/64]&(1<<(b%64)) == 0 {
		return nil
	}
	if len(n.litList) > maxLitList {
		return n.lits[in]
	}
	for _, l := range n.litList {
		if l.name == in {
			return l.next
		}
	}
	return nil
}

// pathEdge is one component leading to a child node, with a fast test for
// a plain (glob-free) input element.
type pathEdge struct {
	c    component
	kind edgeKind
	fix  string   // the literal, prefix or suffix of kind
	glob *globPat // the pattern of edgeGlob, parsed
	// first has bit b set when a plain element starting with byte b may
	// match; minLen is the fewest bytes one that matches has: most
	// elements fail these two tests, before any matching.
	first  [4]uint64
	minLen int
	// last is first for the last byte: set for a suffix edge (*.aws),
	// every byte for the others.
	last [4]uint64
	next *pathNode
}

type edgeKind uint8

const (
	edgeLiteral edgeKind = iota // pat is a name: equal
	edgePrefix                  // pat is name*: starts with
	edgeSuffix                  // pat is *name: ends with
	edgeAny                     // pat is *: anything
	edgeGlob                    // another pattern, parsed once (globPat)
	edgePattern                 // a pattern compileGlob leaves alone: path.Match
)

const noRule = int(^uint(0) >> 1)

// globMeta are the bytes that make a path.Match pattern more than a name.
const globMeta = `*?[]\`

// compilePaths compiles rules, in order, into one matcher.
func compilePaths(rules ...[]pathRule) *pathMatcher {
	m := &pathMatcher{anchored: newPathNode(), floating: newPathNode()}
	for _, list := range rules {
		for _, r := range list {
			idx := len(m.names)
			m.names = append(m.names, r.name)
			n := m.floating
			if r.anchored {
				n = m.anchored
			}
			for _, c := range r.comps {
				n = n.child(c)
			}
			if r.whole {
				n.whole = min(n.whole, idx)
			} else {
				n.end = min(n.end, idx)
			}
		}
	}
	m.anchored.setBelow()
	m.floating.setBelow()
	m.anchored.indexGlobs()
	m.floating.indexGlobs()
	m.wordSafe = m.floating.wordSafe()
	m.enter = newEnterFilter(m.floating)
	return m
}

// wordSafe reports, for the root of the floating rules, that no rule ends
// one component below it on an edge a plain word could match: a rule
// with a '.' in its name (.ssh, *.aws) never matches "utf-8". Edges
// whose pattern is not a name, prefix or suffix count as matching.
func (n *pathNode) wordSafe() bool {
	if n.end != noRule || n.whole != noRule {
		return false
	}
	for _, e := range n.all {
		if min(e.next.end, e.next.whole) == noRule {
			continue
		}
		switch e.kind {
		case edgeLiteral:
			if plainWord(e.fix) {
				return false
			}
		case edgePrefix, edgeSuffix:
			if e.fix == "" || plainWord(e.fix) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (n *pathNode) setBelow() int {
	n.below = min(n.end, n.whole)
	for _, e := range n.all {
		n.below = min(n.below, e.next.setBelow())
	}
	return n.below
}

func newPathNode() *pathNode {
	return &pathNode{lits: map[string]*pathNode{}, end: noRule, whole: noRule, below: noRule}
}

// child returns the node an edge for c leads to, adding both when the node
// has no edge for the same component yet.
func (n *pathNode) child(c component) *pathNode {
	for _, e := range n.all {
		if e.c.pat == c.pat && e.c.example == c.example && slices.Equal(e.c.except, c.except) {
			return e.next
		}
	}
	e := &pathEdge{c: c, next: newPathNode(), first: allBytes, last: allBytes}
	e.kind, e.fix = classify(c)
	switch e.kind {
	case edgePrefix:
		e.minLen = len(e.fix)
		if e.fix != "" {
			e.first = [4]uint64{}
			e.first[e.fix[0]/64] |= 1 << (e.fix[0] % 64)
		}
	case edgeSuffix:
		e.minLen = len(e.fix)
		if e.fix != "" {
			b := e.fix[len(e.fix)-1]
			e.last = [4]uint64{}
			e.last[b/64] |= 1 << (b % 64)
		}
	case edgePattern:
		if g, ok := compileGlob(c.pat); ok {
			e.kind, e.glob, e.first, e.minLen = edgeGlob, g, g.first, g.minLen
		}
	}
	n.all = append(n.all, e)
	if e.kind == edgeLiteral {
		n.lits[c.pat] = e.next
		n.litList = append(n.litList, litEdge{c.pat, e.next})
		b := firstByte(c.pat)
		n.firsts[b/64] |= 1 << (b % 64)
	} else {
		n.globs = append(n.globs, e)
	}
	return e.next
}

// classify picks the fast test for a component. A literal that is not its
// own example, or one with exceptions, stays a pattern edge.
func classify(c component) (edgeKind, string) {
	p := c.pat
	switch {
	case !strings.ContainsAny(p, globMeta):
		if p == c.example && len(c.except) == 0 {
			return edgeLiteral, p
		}
		return edgePattern, ""
	case p == "*":
		return edgeAny, ""
	case strings.HasSuffix(p, "*") && !strings.ContainsAny(p[:len(p)-1], globMeta):
		return edgePrefix, p[:len(p)-1]
	case strings.HasPrefix(p, "*") && !strings.ContainsAny(p[1:], globMeta):
		return edgeSuffix, p[1:]
	}
	return edgePattern, ""
}

// matchPlain is c.match for an input element with no glob in it.
func (e *pathEdge) matchPlain(in string) bool {
	if len(in) < e.minLen || in != "" && (e.first[in[0]/64]&(1<<(in[0]%64)) == 0 ||
		e.last[in[len(in)-1]/64]&(1<<(in[len(in)-1]%64)) == 0) {
		return false
	}
	var ok bool
	switch e.kind {
	case edgeLiteral:
		return in == e.fix
	case edgePrefix:
		ok = strings.HasPrefix(in, e.fix)
	case edgeSuffix:
		ok = strings.HasSuffix(in, e.fix)
	case edgeAny:
		ok = true
	case edgeGlob:
		ok = e.glob.match(in)
	default:
		ok, _ = path.Match(e.c.pat, in)
	}
	return ok && (e.c.except == nil || !slices.Contains(e.c.except, in))
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

// match finds the first rule of the list that matches the path's
// components: anchored rules from the root (and, on macOS, from the etc of
// /private/etc), the others at every position. plain says that no
// component holds a glob (*, ? or [), which spares the walk asking.
func (m *pathMatcher) match(comps []string, rooted, plain bool) (rule string, hit bool) {
	best := noRule
	if rooted {
		m.anchored.walk(comps, plain, &best)
		// macOS: /etc is a symlink to /private/etc.
		if len(comps) > 1 && comps[0] == "private" && comps[1] == "etc" {
			m.anchored.walk(comps[1:], plain, &best)
		}
	}
	for i := range comps {
		if plain && !m.enter.mayTake(comps[i]) {
			continue // no floating rule starts at this element
		}
		m.floating.walk(comps[i:], plain, &best)
	}
	if best == noRule {
		return "", false
	}
	return m.names[best], true
}

// walk lowers best to the index of every rule that matches comps from n.
func (n *pathNode) walk(comps []string, plain bool, best *int) {
	*best = min(*best, n.end)
	if len(comps) == 0 {
		*best = min(*best, n.whole)
		return
	}
	in, rest := comps[0], comps[1:]
	if !plain && strings.ContainsAny(in, globInput) {
		// A glob in the input: each component says whether the shell
		// would expand it to a name the component matches.
		for _, e := range n.all {
			if e.c.match(in) {
				e.next.walk(rest, plain, best)
			}
		}
		return
	}
	if next := n.lit(in); next != nil {
		next.walk(rest, plain, best)
	}
	a, b, c := n.globsFor(in)
	for _, globs := range [3][]*pathEdge{a, b, c} {
		for _, e := range globs {
			if e.matchPlain(in) {
				e.next.walk(rest, plain, best)
			}
		}
	}
}

// globInput are the bytes that make an input element a glob (see
// component.match).
const globInput = "*?["

var globInputSet = byteSet(globInput)

// above finds the first anchored rule whose path lies under the rooted
// path comps (the rule's leading components match all of comps): a tree
// that holds what the rule forbids. comps hold no glob.
func (m *pathMatcher) above(comps []string) (rule string, hit bool) {
	best := noRule
	m.anchored.under(comps, &best)
	if best == noRule {
		return "", false
	}
	return m.names[best], true
}

// under lowers best to the lowest rule under the nodes comps lead to.
func (n *pathNode) under(comps []string, best *int) {
	if len(comps) == 0 {
		*best = min(*best, n.below)
		return
	}
	in, rest := comps[0], comps[1:]
	if next := n.lit(in); next != nil {
		next.under(rest, best)
	}
	a, b, c := n.globsFor(in)
	for _, globs := range [3][]*pathEdge{a, b, c} {
		for _, e := range globs {
			if e.matchPlain(in) {
				e.next.under(rest, best)
			}
		}
	}
}

// splitComps is pathComps into a caller's buffer: cleaned, lower-case
// components, and whether the path is rooted (a relative path climbing
// with leading ".." counts as rooted, since the working directory is
// unknown).
func splitComps(buf []string, p string) (comps []string, rooted bool) {
	rooted = strings.HasPrefix(p, "/")
	comps, ok := splitCleanLower(buf[:0], p)
	if !ok {
		comps = cleanComps(buf[:0], strings.ToLower(p), rooted)
	}
	if !rooted {
		n := 0
		for n < len(comps) && comps[n] == ".." {
			n++
		}
		if n > 0 {
			comps, rooted = comps[n:], true
		}
	}
	return comps, rooted
}

// cleanComps appends the elements path.Clean(p) has, split at '/' after
// its leading '/', without writing the cleaned path: empty and "."
// elements go, ".." takes back the element before it (at the root it goes;
// in a relative path with nothing to take back, it stays), and a path
// cleaned to nothing is "/" (one empty element) or ".".
func cleanComps(comps []string, p string, rooted bool) []string {
	for rest := p; rest != ""; {
		e := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			e, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		switch {
		case e == "" || e == ".":
		case e != "..":
			comps = append(comps, e)
		case len(comps) > 0 && comps[len(comps)-1] != "..":
			comps = comps[:len(comps)-1]
		case !rooted:
			comps = append(comps, "..")
		}
	}
	if len(comps) == 0 {
		if rooted {
			return append(comps, "")
		}
		return append(comps, ".")
	}
	return comps
}

// splitCleanLower appends the elements of p (after its leading "/") when
// path.Clean and strings.ToLower leave p as it is, most paths, which then
// need neither: ASCII with no upper case, no empty, "." or ".." element,
// no trailing slash. ok is false for any other p, and comps then holds
// what was appended before that was known.
func splitCleanLower(comps []string, p string) (_ []string, ok bool) {
	if p == "" {
		return comps, false
	}
	start := 0 // of the element
	if p[0] == '/' {
		start = 1
	}
	for i := start; i <= len(p); i++ {
		if i < len(p) {
			c := p[i]
			if c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
				return comps, false
			}
			if c != '/' {
				continue
			}
		}
		// An element ends at i: p[start:i].
		e := p[start:i]
		if e == "" || e == "." || e == ".." {
			return comps, false
		}
		comps = append(comps, e)
		start = i + 1
	}
	return comps, true
}
