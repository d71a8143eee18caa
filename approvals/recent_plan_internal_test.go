package approvals

import (
	"context"
	"strings"
	"testing"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestSelectRecent_UsesIndexes: the listing of finished requests reads
// each of its two sides through an index (requests_decided, partial, for
// the requests decided later; requests_created for those decided on
// arrival), on both engines, never by reading the whole table. On
// PostgreSQL sequential scans are turned off for the plan: a table this
// small is read whole when it may be, and what is asked is whether the
// partial index can serve the query at all.
func TestSelectRecent_UsesIndexes(t *testing.T) {
	for _, d := range []storage.Dialect{storage.SQLite, storage.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			db := storagetest.OpenDialect(t, d)
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			explain := "EXPLAIN QUERY PLAN "
			if d == storage.Postgres {
				if _, err := conn.ExecContext(ctx, `SET enable_seqscan = off`); err != nil {
					t.Fatal(err)
				}
				defer conn.ExecContext(context.WithoutCancel(ctx), `RESET enable_seqscan`)
				explain = "EXPLAIN "
			}
			rows, err := conn.QueryContext(ctx, explain+selectRecent, 10)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			cols, _ := rows.Columns()
			for rows.Next() {
				cells := make([]any, len(cols))
				for i := range cells {
					cells[i] = new(any)
				}
				if err := rows.Scan(cells...); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, toText(*cells[len(cells)-1].(*any)))
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(plan, "; ")
			for _, index := range []string{"requests_decided", "requests_created"} {
				if !strings.Contains(got, index) {
					t.Errorf("plan %q: want it to use %s", got, index)
				}
			}
			if strings.Contains(got, "Seq Scan") || strings.Contains(strings.ReplaceAll(got, "SCAN requests USING", ""), "SCAN requests") {
				t.Errorf("plan %q reads the whole table", got)
			}
		})
	}
}

// toText is a plan line as text, whichever type the driver gave.
func toText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
