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
	switch kind {
	case KindNone:
		return true
	case KindPathGlob:
		p, t := n.cleanPath(pattern), n.cleanPath(target)
		if !hasMeta(p) {
			return p == t
		}
		return globMatch(p, t)
	case KindHost:
		return matchHost(hostPattern(pattern), hostOf(target))
	}
	return pattern == target
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
	switch kind {
	case KindNone:
		return append(buf, "*")
	case KindPathGlob:
		t := n.cleanPath(target)
		out := append(buf, t, "")
		for d := t; ; {
			d = path.Dir(d)
			out = append(out, d)
			if d == "/" || d == "." {
				break
			}
		}
		return out
	case KindHost:
		h := hostOf(target)
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
	return append(buf, target, "")
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
