package vaglio

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

// checkGlob compares the parsed pattern with path.Match on name: the same
// answer, and mayMatch never false where path.Match matches.
func checkGlob(t *testing.T, pat, name string) {
	t.Helper()
	want, err := path.Match(pat, name)
	g, ok := compileGlob(pat)
	if !ok {
		if err == nil && !strings.Contains(pat, `\`) {
			t.Fatalf("compileGlob(%q) refused a pattern path.Match takes", pat)
		}
		return
	}
	if err != nil {
		t.Fatalf("compileGlob(%q) took a pattern path.Match calls malformed on %q: %v", pat, name, err)
	}
	if got := g.match(name); got != want {
		t.Fatalf("%q on %q: parsed %v, path.Match %v", pat, name, got, want)
	}
	if want && !g.mayMatch(name) {
		t.Fatalf("%q on %q: mayMatch false on a match", pat, name)
	}
}

// TestGlobLikePathMatch: every pattern of the rule lists, and random
// patterns and names over a small alphabet (stars, classes, '?', '/',
// multi-byte and invalid UTF-8), get path.Match's answer.
func TestGlobLikePathMatch(t *testing.T) {
	var pats []string
	for _, rules := range pathMatchLists() {
		for _, r := range rules {
			for _, c := range r.comps {
				pats = append(pats, c.pat)
			}
		}
	}
	r := rand.New(rand.NewPCG(39, 2))
	patPieces := []string{"*", "**", "?", "a", "b", ".", "-", "/", "é", "\xff", "[ab]", "[^a]", "[a-c]", "[é-ü]", "[0-9]", "[", "]", "[*]", "[^]", "[]a]", "[a-]"}
	namePieces := []string{"a", "b", "c", ".", "-", "/", "é", "ü", "\xff", "0", "9", "*", "x"}
	draw := func(pieces []string, n int) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 3000 {
		pats = append(pats, draw(patPieces, 6))
	}
	for _, pat := range pats {
		checkGlob(t, pat, pat)
		checkGlob(t, pat, "")
		for range 60 {
			checkGlob(t, pat, draw(namePieces, 8))
		}
	}
}

// FuzzGlob: the parsed pattern answers as path.Match for any pattern and
// name.
func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{{"*gitconfig*", ".gitconfig.local"}, {"[._]vimrc*", "_vimrc"}, {"[0-9]*", "12"},
		{"*.git", "x.git"}, {"a*b?c", "axxbéc"}, {"[^a-c]*", "\xff"}, {"*a*a", "aaa/a"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, name string) { checkGlob(t, pat, name) })
}
