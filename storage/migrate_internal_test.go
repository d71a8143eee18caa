package storage

import (
	"strings"
	"testing"
)

// TestMigrations_NumberedOnceEach: both engines' migrations run 1, 2, 3…
// with the same numbers and names, and a list with a number taken twice
// or a gap is refused, naming the files.
func TestMigrations_NumberedOnceEach(t *testing.T) {
	lite, err := migrations(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := migrations(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if len(lite) != len(pg) {
		t.Fatalf("%d SQLite migrations, %d PostgreSQL ones", len(lite), len(pg))
	}
	for i := range lite {
		if lite[i].name != pg[i].name {
			t.Errorf("migration %d: %s on SQLite, %s on PostgreSQL", i+1, lite[i].name, pg[i].name)
		}
	}
	for _, c := range []struct {
		ms   []migration
		want string
	}{
		{[]migration{{1, "0001_a.sql", ""}, {2, "0002_b.sql", ""}, {2, "0002_c.sql", ""}}, "0002_b.sql and 0002_c.sql share the number 2"},
		{[]migration{{1, "0001_a.sql", ""}, {3, "0003_c.sql", ""}}, "0003_c.sql: number 3, want 2"},
	} {
		if err := contiguous(SQLite, c.ms); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("contiguous: %v, want an error with %q", err, c.want)
		}
	}
}
