package approvals_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// BenchmarkSubmitDecidedNow submits requests that policy allows at once
// (each one a committed request row and audit row, through the group
// writer) from 64 goroutines, and from one (a group per request: the
// latency of one), on each engine. Besides the time it reports
// the CPU per request (this process: the gateway's side) and, on
// PostgreSQL, the group commits per request (the audit chain's head moves
// once in each; the server's statistics lag by up to a second).
func BenchmarkSubmitDecidedNow(b *testing.B) {
	for _, d := range []storage.Dialect{storage.SQLite, storage.Postgres} {
		for _, clients := range []int{64, 1} {
			b.Run(fmt.Sprintf("%s/clients=%d", d, clients), func(b *testing.B) {
				db := storagetest.OpenDialect(b, d)
				norm := policy.Normalizer{Home: "/home/owner"}
				grants := policy.NewGrantStore(db, norm, time.Now)
				svc := approvals.New(db, grants, &policy.Decider{Grants: grants, Norm: norm},
					approvals.Options{GrantTTL: grantTTL, StaleAfter: staleTTL, Retention: retention})
				ctx := context.Background()
				var next atomic.Int64
				run := func(n int) {
					var wg sync.WaitGroup
					for range clients {
						wg.Go(func() {
							for {
								i := next.Add(1)
								if i > int64(n) {
									return
								}
								r, _, err := svc.Submit(ctx, approvals.Submission{Profile: profile,
									CallID: fmt.Sprintf("bench-%d", i), Capability: "llm:local", Channel: "web", SenderID: "owner",
									// As the API submits: a repeated call_id is found by the insert.
									Admit: func() error { return nil }, Refund: func() {}})
								if err != nil || r.Status != approvals.StatusAllowed {
									b.Errorf("submit: %v (%s)", err, r.Status)
									return
								}
							}
						})
					}
					wg.Wait()
				}
				run(4 * clients) // warm: connections, statements
				next.Store(int64(4 * clients))
				commits := func() int64 { return 0 }
				if d == storage.Postgres {
					commits = func() int64 {
						// Every group commit moves the audit chain's head once.
						var n int64
						if err := db.QueryRowContext(ctx, `SELECT n_tup_upd FROM pg_stat_user_tables
WHERE schemaname = current_schema() AND relname = 'audit_chain'`).Scan(&n); err != nil {
							b.Fatal(err)
						}
						return n
					}
				}
				b.ReportAllocs()
				c0, cpu0 := commits(), approvals.CPUTime()
				b.ResetTimer()
				run(b.N + 4*clients)
				b.StopTimer()
				cpu, c := approvals.CPUTime()-cpu0, commits()-c0
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_us/req")
				if d == storage.Postgres {
					b.ReportMetric(float64(c)/float64(b.N), "groups/req")
				}
			})
		}
	}
}
