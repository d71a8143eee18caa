package storage

import "testing"

// TestAnonymous: $1 … $n in order become "?"; anything else is left as it
// is, so the statement binds exactly as it was written.
func TestAnonymous(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`INSERT INTO t (a, b) VALUES ($1, $2)`, `INSERT INTO t (a, b) VALUES (?, ?)`},
		{`UPDATE t SET a = $1 WHERE id = $2 AND s = 'x$3'`, `UPDATE t SET a = ? WHERE id = ? AND s = 'x$3'`},
		{`SELECT "$1" FROM t WHERE a = $1`, `SELECT "$1" FROM t WHERE a = ?`},
		{`SELECT * FROM t WHERE a = $2 AND b = $1`, `SELECT * FROM t WHERE a = $2 AND b = $1`},   // out of order
		{`SELECT * FROM t WHERE a = $1 OR b = $1`, `SELECT * FROM t WHERE a = $1 OR b = $1`},     // reused
		{`SELECT * FROM t WHERE a = $1 AND b = $10`, `SELECT * FROM t WHERE a = $1 AND b = $10`}, // a gap
		{`SELECT $`, `SELECT $`},
		{`SELECT 'it''s' WHERE a = $1`, `SELECT 'it''s' WHERE a = ?`},
	} {
		if got := anonymous(c.in); got != c.want {
			t.Errorf("anonymous(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
