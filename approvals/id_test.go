package approvals

import (
	"sort"
	"testing"
	"time"
)

// TestNewID: ids are "r" + 26 characters of lower-case base32, unique, and
// sort as their creation times do (milliseconds apart or more).
func TestNewID(t *testing.T) {
	base := time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for i := range 2000 {
		id := newIDAt(base.Add(time.Duration(i*37) * time.Millisecond))
		if len(id) != 27 || id[0] != 'r' {
			t.Fatalf("id %q: want r + 26 characters", id)
		}
		for _, c := range id[1:] {
			if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
				t.Fatalf("id %q: character %q outside lower-case base32", id, c)
			}
		}
		if seen[id] {
			t.Fatalf("id %q twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids do not sort as their times")
	}
	// Far apart in time too (the high digits).
	if a, b := newIDAt(time.Unix(0, 0)), newIDAt(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)); a >= b {
		t.Fatalf("%s sorts after %s", a, b)
	}
}
