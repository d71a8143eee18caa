// The guard's forbidden paths as a kernel sandbox reads them (gateway run):
// the same list the guard checks text against, made concrete for one
// machine's home directory and one gateway's own files.

package vaglio

import (
	"path"
	"slices"
	"strings"
)

// ForbiddenPattern is one forbidden path anchored at the root: one element
// per path component, each matching names in its directory.
type ForbiddenPattern struct {
	// Name names the rule as the guard's reasons do (~/.ssh, /etc/shadow*).
	Name  string
	Elems []PathElem
	// Whole means only the path itself is forbidden, not what is under it
	// (the guard refuses a listing of /proc, not /proc/cpuinfo).
	Whole bool
}

// PathElem is one component of a ForbiddenPattern.
type PathElem struct{ c component }

// Match reports whether a directory entry's name (any case) is matched.
func (e PathElem) Match(name string) bool {
	name = strings.ToLower(name)
	ok, _ := path.Match(e.c.pat, name)
	return ok && !slices.Contains(e.c.except, name)
}

// String is the element's pattern, for messages.
func (e PathElem) String() string { return e.c.pat }

// ForbiddenPatterns is the guard's one list of forbidden paths, the closed
// list and the gateway's own files (own.Paths), each anchored at the root:
// a rule that matches anywhere in a path (.ssh, .aws/credentials) is placed
// under home, the directory the agent's secrets live in. With home empty
// those rules are left out.
func ForbiddenPatterns(home string, own Own) []ForbiddenPattern {
	var homeComps []component
	if home = path.Clean(strings.ToLower(home)); strings.HasPrefix(home, "/") && home != "/" {
		for _, c := range strings.Split(strings.TrimPrefix(home, "/"), "/") {
			homeComps = append(homeComps, lit(c))
		}
	}
	var out []ForbiddenPattern
	add := func(r pathRule) {
		var comps []component
		switch {
		case r.anchored:
			comps = r.comps
		case homeComps != nil:
			comps = append(slices.Clone(homeComps), r.comps...)
		default:
			return
		}
		p := ForbiddenPattern{Name: r.name, Whole: r.whole}
		for _, c := range comps {
			p.Elems = append(p.Elems, PathElem{c})
		}
		out = append(out, p)
	}
	for _, r := range forbiddenPaths {
		add(r)
	}
	for _, r := range compileOwn(own, home).paths {
		add(r)
	}
	return out
}
