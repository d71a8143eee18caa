// How a grant's pattern covers a target, and the index keys (anchors) a
// grant is found under.

package policy

import (
	"path"
	"strings"
)

// MatchGrant reports whether a grant's target pattern covers a target, both
// given raw. Grants are narrow by construction: path globs (* within a
// segment, ** across), host wildcards (*.example.com for sub-domains only),
// equality for exact targets, and anything for kind none.
func (n Normalizer) MatchGrant(kind TargetKind, pattern, target string) bool {
	if kind == KindNone {
		return true
	}
	p, glob := n.grantPattern(kind, pattern)
	return matchGrantTo(kind, p, glob, n.subject(kind, target))
}

// grantPattern is a grant's pattern as MatchGrant reads it (the cleaned
// path, the host pattern, or as it is), and whether it is a path glob:
// the grant cache computes it once per grant.
func (n Normalizer) grantPattern(kind TargetKind, pattern string) (p string, glob bool) {
	switch kind {
	case KindPathGlob:
		p = n.cleanPath(pattern)
		return p, hasMeta(p)
	case KindHost:
		return hostPattern(pattern), false
	}
	return pattern, false
}

// matchGrantTo is MatchGrant on a grantPattern p (glob: a path glob) and
// a subject t.
func matchGrantTo(kind TargetKind, p string, glob bool, t string) bool {
	switch kind {
	case KindNone:
		return true
	case KindPathGlob:
		if !glob {
			return p == t
		}
		return globMatch(p, t)
	case KindHost:
		return matchHost(p, t)
	}
	return p == t
}

// matchHost: "*.example.com" matches sub-domains at any depth but not
// example.com itself; other patterns are literal.
func matchHost(pattern, host string) bool {
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		return strings.HasSuffix(host, "."+rest) && len(host) > len(rest)+1
	}
	return pattern == host
}

// grantAnchors lists the index keys under which a grant covering target
// could be stored, so the grants store finds candidates with one indexed
// IN query instead of scanning every grant of a principal. See Anchor.
func (n Normalizer) grantAnchors(kind TargetKind, target string) []string {
	return n.appendGrantAnchors(nil, kind, target)
}

// appendGrantAnchors appends grantAnchors(kind, target) to buf; a caller
// that only reads them passes a buffer of its own (the grant cache, on
// every decision), so listing them allocates nothing.
func (n Normalizer) appendGrantAnchors(buf []string, kind TargetKind, target string) []string {
	if kind == KindNone {
		return append(buf, "*")
	}
	return appendAnchorsOf(buf, kind, n.subject(kind, target))
}

// appendAnchorsOf is appendGrantAnchors for t, the target's subject.
func appendAnchorsOf(buf []string, kind TargetKind, t string) []string {
	switch kind {
	case KindNone:
		return append(buf, "*")
	case KindPathGlob:
		out := append(buf, t, "")
		// Each directory of a clean path is the path cut before a '/',
		// and clean too: it is cut without checking again.
		clean := isClean(t)
		for d := t; ; {
			if i := strings.LastIndexByte(d, '/'); clean && i > 0 {
				d = d[:i]
			} else {
				d = dirOf(d)
			}
			out = append(out, d)
			if d == "/" || d == "." {
				break
			}
		}
		return out
	case KindHost:
		h := t
		out := append(buf, h, "")
		for rest := h; ; {
			_, after, ok := strings.Cut(rest, ".")
			if !ok {
				break
			}
			out = append(out, "*."+after)
			rest = after
		}
		return out
	}
	return append(buf, t, "")
}

// dirOf is path.Dir(p), without cleaning again what is clean already:
// the directory of a clean path is the part before its last "/".
func dirOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return "."
	case i == 0:
		return "/"
	case isClean(p[:i]):
		return p[:i]
	}
	return path.Clean(p[:i+1])
}

// Anchor is the index key of a grant pattern: the pattern itself when it is
// literal, the literal directory before the first wildcard segment for path
// globs, "*.parent" for host wildcards, and "" for any other pattern (the
// small bucket that is always scanned).
func (n Normalizer) Anchor(kind TargetKind, pattern string) string {
	switch kind {
	case KindNone:
		return "*"
	case KindPathGlob:
		p := n.cleanPath(pattern)
		if !hasMeta(p) {
			return p
		}
		segs := strings.Split(p, "/")
		lit := []string{}
		for _, s := range segs {
			// A backslash escapes in doublestar ("\\/" is a literal "/"),
			// so the segments split here are not the pattern's: stop.
			if hasMeta(s) || strings.Contains(s, "\\") {
				break
			}
			lit = append(lit, s)
		}
		d := strings.Join(lit, "/")
		if d == "" && strings.HasPrefix(p, "/") {
			return "/"
		}
		if !strings.HasPrefix(d, "/") {
			return ""
		}
		return d
	case KindHost:
		p := hostPattern(pattern)
		if !hasMeta(p) {
			return p
		}
		if rest, ok := strings.CutPrefix(p, "*."); ok && !hasMeta(rest) {
			return p
		}
		return ""
	}
	if hasMeta(pattern) {
		return ""
	}
	return pattern
}
