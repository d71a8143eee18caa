package approvals

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// BenchmarkGroupOfDecidedNow is the SQLite group writer's work for a
// group of 32 requests decided on arrival, alone: one transaction holding
// each one's row and audit row (the statements Submit hands the writer),
// from one goroutine. Unlike BenchmarkSubmitDecidedNow its groups do not
// depend on how the scheduler ran the callers, so it compares the storage
// cost of a row (schema, statements) between two builds on a busy machine.
// ns/op and cpu_us/req (this process: the writer and the checkpointer)
// are per request.
func BenchmarkGroupOfDecidedNow(b *testing.B) {
	const group = 32
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(b.TempDir(), "g.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type call struct {
		row   requestInsert
		audit storage.AuditRecord
	}
	calls := func(first int) []call {
		out := make([]call, group)
		for i := range out {
			now := time.Now()
			r := Request{ID: newIDAt(now), CallID: "bench-" + strconv.Itoa(first+i), Agent: "a1",
				Status: StatusAllowed, Outcome: policy.Allowed, Reason: "llm:local is allowed", Capability: "llm:local",
				GrantTarget: "*", Autonomy: policy.Supervised, Channel: "web", SenderID: "owner", Intent: "summarise locally",
				Executor: "summariser", ArgKeys: []string{"text"}, DecidedBy: "policy", DecidedAt: &now, CreatedAt: now,
				ExpiresAt: now, Approvals: []Approval{}, Quorum: 1,
				Trace: []policy.Step{{Layer: "table", Outcome: policy.Allowed, Detail: "llm:local at Supervised"}}}
			r.encoded = encodeJSON(&r)
			audit, err := storage.PrepareAuditStrings(storage.AuditEvent{At: now, Actor: "agent:a1",
				Event: storage.AuditOutcome, RequestID: r.ID}, "agent", "a1", "call_id", r.CallID,
				"capability", r.Capability, "outcome", string(r.Outcome), "reason", r.Reason, "status", string(r.Status))
			if err != nil {
				b.Fatal(err)
			}
			out[i] = call{requestRow(r), audit}
		}
		return out
	}
	commit := func(cs []call) {
		err := db.GroupTx(ctx, func(q storage.Querier) error {
			for _, c := range cs {
				if _, err := q.ExecContext(ctx, c.row.query, c.row.args...); err != nil {
					return err
				}
				if err := storage.AppendPrepared(ctx, q, c.audit); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range 8 { // warm: statements prepared, pages cached
		commit(calls(-group * (i + 1)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	var cpu time.Duration
	for n := 0; n < b.N; n += group {
		b.StopTimer()
		cs := calls(n)
		b.StartTimer()
		cpu0 := CPUTime()
		commit(cs)
		cpu += CPUTime() - cpu0
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu_us/req")
}
