package vaglio

import (
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// The rule-by-rule matcher the compiled one replaced, kept as the
// reference it must agree with: every rule in list order, every position,
// path.Match on every component.

func refPathComps(p string) (comps []string, rooted bool) {
	rooted = strings.HasPrefix(p, "/")
	comps = strings.Split(strings.TrimPrefix(path.Clean(strings.ToLower(p)), "/"), "/")
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

// matchPathRules finds the first rule that matches the path's components.
func refMatchPathRules(rules []pathRule, comps []string, rooted bool) (rule string, hit bool) {
	for _, r := range rules {
		if r.anchored {
			if rooted && (r.refMatchAt(comps) ||
				// macOS: /etc is a symlink to /private/etc.
				(len(comps) > 1 && comps[0] == "private" && comps[1] == "etc" && r.refMatchAt(comps[1:]))) {
				return r.name, true
			}
			continue
		}
		for i := range comps {
			if r.whole && len(comps)-i != len(r.comps) {
				continue
			}
			if refHasPrefix(comps[i:], r.comps) {
				return r.name, true
			}
		}
	}
	return "", false
}

// matchAt reports whether comps starts with the rule's components (and, for
// a whole rule, ends there).
func (r pathRule) refMatchAt(comps []string) bool {
	if r.whole && len(comps) != len(r.comps) {
		return false
	}
	return refHasPrefix(comps, r.comps)
}

func refHasPrefix(comps []string, rule []component) bool {
	if len(comps) < len(rule) {
		return false
	}
	for i, c := range rule {
		if !c.match(comps[i]) {
			return false
		}
	}
	return true
}

// refHoldsForbidden is holdsForbidden as it was, rule by rule.
func refHoldsForbidden(p, home string, own *ownRules) (string, bool) {
	p = expandTilde(strings.TrimSpace(p), home)
	if p == "" {
		return "", false
	}
	comps, rooted := pathComps(p)
	for i, c := range comps {
		if strings.ContainsAny(c, "*?[{") {
			comps = comps[:i]
			break
		}
	}
	if !rooted {
		if len(comps) == 0 || comps[0] == "." {
			return "a directory that may be /", true
		}
		return "", false
	}
	if len(comps) == 1 && comps[0] == "." || len(comps) == 1 && comps[0] == "" {
		comps = nil // the root
	}
	above := func(rule []component) bool {
		if len(comps) > len(rule) {
			return false
		}
		for i, c := range comps {
			if !rule[i].match(c) {
				return false
			}
		}
		return true
	}
	for _, r := range forbiddenPaths {
		if r.anchored && above(r.comps) {
			return r.name, true
		}
	}
	if own != nil {
		for _, r := range own.paths {
			if above(r.comps) {
				return r.name, true
			}
		}
	}
	if home != "" {
		hc, _ := pathComps(home)
		if len(comps) <= len(hc) && hasPrefixStrings(hc, comps) {
			return "~/.ssh", true
		}
	}
	return "", false
}

// pathMatchLists are the lists the guard compiles, with the gateway's own
// files after the closed list as the guard reads them (some with glob
// syntax in a name).
var testOwn = compileOwn(Own{Paths: []string{
	"/srv/gw/gateway.db", "~/.config/metnos-gateway/config.toml", "/var/lib/metnos/state.d", "/opt/ab/t\\ok?n",
}}, testHome)

func pathMatchLists() map[string][]pathRule {
	own := testOwn
	return map[string][]pathRule{
		"forbidden":         forbiddenPaths,
		"forbidden and own": append(append([]pathRule{}, forbiddenPaths...), own.paths...),
		"persistence":       persistencePoints,
	}
}

// randomPathElement draws a path element near the rules: their names and
// examples, changed a little, as globs, in upper case, or random bytes.
func randomPathElement(r *rand.Rand, names []string) string {
	n := names[r.IntN(len(names))]
	switch r.IntN(14) {
	case 0:
		return n + string(rune('a'+r.IntN(26)))
	case 1:
		return string(rune('a'+r.IntN(26))) + n
	case 2:
		if len(n) > 1 {
			return n[:r.IntN(len(n))]
		}
	case 3:
		if len(n) > 0 {
			k := r.IntN(len(n))
			return n[:k] + []string{"*", "?", "[a-z]", "[!x]", "[", "\\", "]"}[r.IntN(7)] + n[k:]
		}
	case 4:
		return strings.ToUpper(n)
	case 5:
		return []string{"..", ".", "", "private", "etc", "123", "0x1", "*", "**", "?", "[0-9]*", "[", "self", "~", "m*", "std*", "sd?"}[r.IntN(17)]
	case 6:
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = "ab.-_*?[]\\é/0"[r.IntN(14)]
		}
		return string(b)
	case 7:
		return safeDevices[r.IntN(len(safeDevices))]
	}
	return n
}

// randomPath draws a path from elements near the rules, rooted or not;
// half the time the components of rules[i%len(rules)], some changed, are
// in it (so that every rule is drawn).
func randomPath(r *rand.Rand, names []string, rules []pathRule, i int) string {
	var elems []string
	for range r.IntN(4) {
		elems = append(elems, randomPathElement(r, names))
	}
	if r.IntN(2) == 0 {
		for _, c := range rules[i%len(rules)].comps {
			e := c.example
			if r.IntN(3) == 0 {
				e = randomPathElement(r, []string{c.example, c.pat})
			}
			elems = append(elems, e)
		}
	}
	for range r.IntN(3) {
		elems = append(elems, randomPathElement(r, names))
	}
	var b strings.Builder
	b.WriteString([]string{"/", "", "../", "../../", "./", "//", "~/", "/private/"}[r.IntN(8)])
	for i, e := range elems {
		if i > 0 {
			b.WriteString([]string{"/", "/", "/", "//", "/./", "/../"}[r.IntN(6)])
		}
		b.WriteString(e)
	}
	if r.IntN(6) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

func compileLists(lists map[string][]pathRule) map[string]*pathMatcher {
	out := map[string]*pathMatcher{}
	for name, rules := range lists {
		out[name] = compilePaths(rules)
	}
	return out
}

func ruleNames(lists map[string][]pathRule) []string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		rules := lists[name]
		for _, rule := range rules {
			for _, c := range rule.comps {
				names = append(names, c.pat, c.example)
				names = append(names, c.except...)
			}
		}
	}
	return names
}

// TestPathMatcherDifferential: the compiled matcher names the same rule as
// the rule-by-rule reference, splits paths as it did, and says the same of
// the trees that hold a forbidden path, over random paths built near the
// rules.
func TestPathMatcherDifferential(t *testing.T) {
	lists := pathMatchLists()
	names := ruleNames(lists)
	r := rand.New(rand.NewPCG(39, 1))
	hits, reached := map[string]int{}, map[*pathRule]bool{}
	compiled := compileLists(lists)
	var all []pathRule
	for _, name := range slices.Sorted(maps.Keys(lists)) {
		all = append(all, lists[name]...)
	}
	for i := range 50_000 {
		p := randomPath(r, names, all, i)
		if i%2 == 1 {
			p = strings.ReplaceAll(p, "~", testHome)
		}
		checkHolds(t, p)
		for name, rules := range lists {
			if _, hit := checkPathMatch(t, name, rules, compiled[name], p); !hit {
				continue
			}
			hits[name]++
			comps, rooted := refPathComps(p)
			for i := range rules {
				if !reached[&rules[i]] {
					_, reached[&rules[i]] = refMatchPathRules(rules[i:i+1], comps, rooted)
				}
			}
		}
	}
	t.Logf("of 50,000 random paths, hits: %v", hits)
	// The draw must reach every rule (first or not), or the comparison
	// says little.
	for _, rules := range lists {
		for i := range rules {
			if !reached[&rules[i]] {
				t.Errorf("no random path reached %s", rules[i].name)
			}
		}
	}
}

// checkPathMatch compares the compiled matcher with the reference on p and
// returns what both say.
func checkPathMatch(t *testing.T, name string, rules []pathRule, m *pathMatcher, p string) (string, bool) {
	t.Helper()
	if _, ok := splitCleanLower(nil, p); ok && path.Clean(strings.ToLower(p)) != p {
		t.Fatalf("splitCleanLower(%q) takes it as clean but path.Clean and strings.ToLower change it", p)
	}
	wantComps, wantRooted := refPathComps(p)
	gotComps, gotRooted := splitComps(nil, p)
	if strings.Join(gotComps, "\x00") != strings.Join(wantComps, "\x00") || len(gotComps) != len(wantComps) || gotRooted != wantRooted {
		t.Fatalf("splitComps(%q) = %q %v, want %q %v", p, gotComps, gotRooted, wantComps, wantRooted)
	}
	wantRule, wantHit := refMatchPathRules(rules, wantComps, wantRooted)
	gotRule, gotHit := m.match(gotComps, gotRooted, !strings.ContainsAny(p, globInput))
	if gotRule != wantRule || gotHit != wantHit {
		t.Fatalf("%s: %q: compiled %q %v, rule by rule %q %v", name, p, gotRule, gotHit, wantRule, wantHit)
	}
	return wantRule, wantHit
}

// checkHolds compares holdsForbidden with the rule-by-rule reference on p.
func checkHolds(t *testing.T, p string) {
	t.Helper()
	for _, own := range []*ownRules{nil, testOwn} {
		wantRule, wantHit := refHoldsForbidden(p, testHome, own)
		if gotRule, gotHit := holdsForbidden(p, testHome, own); gotRule != wantRule || gotHit != wantHit {
			t.Fatalf("holdsForbidden(%q, own %v) = %q %v, rule by rule %q %v", p, own != nil, gotRule, gotHit, wantRule, wantHit)
		}
	}
}

// FuzzPathMatcher: the compiled matchers and the rule-by-rule reference
// agree on any path, as rules and as trees.
func FuzzPathMatcher(f *testing.F) {
	for _, s := range []string{"/etc/passwd", "~/.ssh/id_rsa", "/dev/m*", "/dev/std*", "/proc/12", "/PRIVATE/etc/Shadow.old",
		"../../root", "x/.config/a/credentials.env", "/etc/ssl/private/k.pem", "/dev/[", "a\\b", "/srv/gw/gateway.db-wal"} {
		f.Add(s)
	}
	lists := pathMatchLists()
	compiled := compileLists(lists)
	f.Fuzz(func(t *testing.T, p string) {
		checkHolds(t, p)
		for name, rules := range lists {
			checkPathMatch(t, name, rules, compiled[name], p)
		}
	})
}

// TestForbiddenPathIn_PlainWords: the shortcut for a plain word answers as
// the whole reading does, for words drawn from the rules' own names.
func TestForbiddenPathIn_PlainWords(t *testing.T) {
	var words []string
	for _, rules := range pathMatchLists() {
		for _, r := range rules {
			for _, c := range r.comps {
				words = append(words, c.pat, c.example)
			}
		}
	}
	r := rand.New(rand.NewPCG(39, 4))
	const alphabet = "abcdegiknoprstuvwy019_-"
	for range 20_000 {
		b := make([]byte, 1+r.IntN(10))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		words = append(words, string(b))
	}
	// The closed list and the gateway's own paths take the shortcut of
	// wordSafe; the words below hold it to the whole reading.
	if !forbiddenMatcher.wordSafe || !testOwn.matcher.wordSafe {
		t.Fatalf("wordSafe: forbidden %v, own %v; want both", forbiddenMatcher.wordSafe, testOwn.matcher.wordSafe)
	}
	n := 0
	for _, w := range words {
		if !plainWord(w) {
			continue
		}
		n++
		// guardRun.check passes a plain word on wordSafe alone: the
		// seed's path regexes must not match one.
		if rule, hit := seedPathIn(w, testHome); hit {
			t.Fatalf("%q: the seed's path rule %s matches a plain word", w, rule)
		}
		for _, m := range []*pathMatcher{nil, testOwn.matcher, persistenceMatcher} {
			gotRule, gotHit := forbiddenPathIn(w, testHome, m)
			wantRule, wantHit := forbiddenPathInText(w, testHome, m)
			if gotRule != wantRule || gotHit != wantHit {
				t.Fatalf("%q: shortcut %q %v, whole reading %q %v", w, gotRule, gotHit, wantRule, wantHit)
			}
		}
	}
	if n < 10_000 {
		t.Fatalf("only %d plain words drawn", n)
	}
}

// TestPathMatcher_Indexed: the persistence list's floating root has the
// glob edges to index, so the differential tests above walk the index.
func TestPathMatcher_Indexed(t *testing.T) {
	if persistenceMatcher.floating.index == nil {
		t.Fatalf("the persistence list's floating root has %d glob edges and no index", len(persistenceMatcher.floating.globs))
	}
}

// TestPathMatcher_EnterFilter: an element the floating root's filter
// rules out takes no edge of the root (no literal, no glob edge's
// matchPlain), so skipping the walk at its position skips nothing that
// could match; and the filter does rule out the common elements. The
// differential tests above hold the whole match, filter included, to the
// rule-by-rule reference.
func TestPathMatcher_EnterFilter(t *testing.T) {
	var words []string
	for _, rules := range pathMatchLists() {
		for _, r := range rules {
			for _, c := range r.comps {
				words = append(words, c.pat, c.example, "x"+c.example, c.example+"x", strings.Trim(c.pat, "*"))
			}
		}
	}
	r := rand.New(rand.NewPCG(39, 5))
	const alphabet = "abcdegiklnoprstuvwy.019_-~$\xc3\xa9"
	for range 50_000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		words = append(words, string(b))
	}
	for name, m := range map[string]*pathMatcher{"forbidden": forbiddenMatcher, "own": testOwn.matcher, "persistence": persistenceMatcher} {
		root, skipped := m.floating, 0
		for _, w := range words {
			if strings.ContainsAny(w, globInput) || m.enter.mayTake(w) {
				continue
			}
			skipped++
			if root.lit(w) != nil || root.lits[w] != nil {
				t.Fatalf("%s: %q ruled out, but it is a literal edge of the floating root", name, w)
			}
			for _, e := range root.globs {
				if e.matchPlain(w) {
					t.Fatalf("%s: %q ruled out, but it takes the edge %q", name, w, e.c.pat)
				}
			}
		}
		for _, w := range []string{"home", "r", "file85.txt", "main.go"} {
			if name == "forbidden" && m.enter.mayTake(w) {
				t.Errorf("%s: %q is not ruled out", name, w)
			}
		}
		t.Logf("%s: %d of %d elements ruled out", name, skipped, len(words))
	}
}
