package policy

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

// TestIsClean_LikePathClean: isClean never says clean of a path that
// path.Clean changes, and says it of the usual ones.
func TestIsClean_LikePathClean(t *testing.T) {
	pieces := []string{"a", "bc", "/", "/", ".", "..", "~", "*", "é", "\xff", " "}
	r := rand.New(rand.NewPCG(39, 3))
	for range 200_000 {
		var b strings.Builder
		for range r.IntN(9) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		if p := b.String(); isClean(p) && path.Clean(p) != p {
			t.Fatalf("isClean(%q), but path.Clean gives %q", p, path.Clean(p))
		}
	}
	for _, p := range []string{"/home/r/docs/d5/file85.txt", "~/notes/**", "a", "/a/.b/c..d"} {
		if !isClean(p) {
			t.Errorf("isClean(%q) = false", p)
		}
	}
}
