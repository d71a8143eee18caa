package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEndsInNumber_Split: the last label is the one strings.Split finds
// (one trailing empty label dropped), for random host-like strings.
func TestEndsInNumber_Split(t *testing.T) {
	ref := func(h string) bool {
		labels := strings.Split(h, ".")
		if labels[len(labels)-1] == "" {
			if len(labels) == 1 {
				return false
			}
			labels = labels[:len(labels)-1]
		}
		last := labels[len(labels)-1]
		if last != "" && strings.Trim(last, "0123456789") == "" {
			return true
		}
		_, ok := ipv4Number(last)
		return ok
	}
	r := rand.New(rand.NewPCG(39, 10))
	pieces := []string{".", "..", "1", "09", "0x1f", "0x", "a", "com", "017", "x1", "08"}
	for range 50_000 {
		var b strings.Builder
		for range r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		if got, want := endsInNumber(b.String()), ref(b.String()); got != want {
			t.Fatalf("endsInNumber(%q) = %v, want %v", b.String(), got, want)
		}
	}
}
