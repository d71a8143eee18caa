package policy

import (
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestAppendAnchorsOf_Dirs: a path's anchors are the path, "", then
// every path.Dir up to "/" or ".", whether the path is clean (cut at
// each '/') or not (cleaned step by step).
func TestAppendAnchorsOf_Dirs(t *testing.T) {
	n := Normalizer{Home: "/home/r"}
	r := rand.New(rand.NewPCG(39, 8))
	pieces := []string{"/", "a", "bc", ".", "..", "~", "//", "x.txt", "./", "é"}
	for range 50_000 {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		tg := n.subject(KindPathGlob, b.String())
		want := []string{tg, ""}
		for d := tg; ; {
			d = path.Dir(d)
			want = append(want, d)
			if d == "/" || d == "." {
				break
			}
		}
		if got := appendAnchorsOf(nil, KindPathGlob, tg); !slices.Equal(got, want) {
			t.Fatalf("anchors of %q (from %q): %q, want %q", tg, b.String(), got, want)
		}
	}
}
