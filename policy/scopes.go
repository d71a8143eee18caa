package policy

import (
	"net"
	"path"
	"slices"
	"strings"
)

// Scopes lists what Allow always may grant for target, narrowest first:
// the target itself; the agent's suggestion when GrantTarget takes it; for
// a path, "dir/*.ext" and then "dir/*"; for a host, "*.parent". Every entry
// passes GrantTarget's "not too wide" rule (none is wider than what an
// agent may suggest), and every entry covers the target. The first entry
// of a list with a taken suggestion is still the target: the default scope
// is GrantTarget's answer, which a card marks separately.
func (n Normalizer) Scopes(kind TargetKind, target, suggested string) []string {
	norm := n.Normalize(kind, target)
	if kind == KindPathGlob && hasMeta(norm) {
		return []string{literalGlob(norm)} // a search is granted as itself (see GrantTarget)
	}
	out := []string{norm}
	add := func(cand string) {
		if cand == "" || slices.Contains(out, cand) {
			return
		}
		if got, ok := n.GrantTarget(kind, target, cand); ok && got == cand {
			out = append(out, cand)
		}
	}
	if suggested != "" {
		if got, ok := n.GrantTarget(kind, target, suggested); ok {
			add(got)
		}
	}
	switch kind {
	case KindPathGlob:
		// A target whose own name holds glob characters is a pattern
		// already: no wider pattern is built on it.
		if hasMeta(norm) || strings.Contains(norm, "\\") || !strings.HasPrefix(norm, "/") {
			break
		}
		dir, name := path.Split(norm)
		if dir == "/" {
			break
		}
		if ext := path.Ext(name); ext != "" && ext != name && !hasMeta(ext) {
			add(dir + "*" + ext)
		}
		add(dir + "*")
	case KindHost:
		if net.ParseIP(strings.Trim(norm, "[]")) != nil || hasMeta(norm) {
			break
		}
		if _, parent, ok := strings.Cut(norm, "."); ok {
			add("*." + parent)
		}
	default:
		return out
	}
	// Narrowest first: a pattern with more literal characters names fewer
	// targets than one it is a widening of (file > dir/*.ext > dir/*;
	// host > *.parent > *.grandparent).
	slices.SortStableFunc(out, func(a, b string) int { return literalLen(b) - literalLen(a) })
	return out
}

// literalLen counts the bytes of a pattern that are not glob characters.
func literalLen(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if !strings.ContainsRune("*?[]{}", rune(p[i])) {
			n++
		}
	}
	return n
}
