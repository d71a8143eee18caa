package approvals

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/vaglio"
)

// TestInsertRequestShort_SameRow: a request stored with the short INSERT
// (the columns at their defaults left out) reads back, column by column,
// as the full INSERT stores it; a request with any of those columns set
// takes the full one.
func TestInsertRequestShort_SameRow(t *testing.T) {
	ctx := context.Background()
	db, err := storage.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	r := Request{
		ID: "r-short", CallID: "c-short", Agent: "a1", Status: StatusAllowed, Outcome: policy.Allowed,
		Reason: "llm:local is allowed", Capability: "llm:local", GrantTarget: "*", Autonomy: policy.Full,
		Channel: "telegram", SenderID: "42", Intent: "summarise", Executor: "perf", ArgKeys: []string{"path"},
		DecidedBy: "policy", DecidedAt: &now, CreatedAt: now, ExpiresAt: now, Approvals: []Approval{},
		Trace:  []policy.Step{{Layer: "table", Outcome: policy.Allowed, Detail: "llm:local at Full"}},
		Vaglio: &vaglio.Verdict{Approved: true, Reason: "ok", TS: now, JudgeKind: "rule-based-v1", Score: 0.7},
		Quorum: 1,
	}
	short := requestRow(r)
	if short.query != insertRequestShort {
		t.Fatalf("a request decided on arrival takes the full INSERT")
	}
	full := r
	full.ID, full.CallID = "r-full", "c-full"
	if _, err := insertRequestTx(ctx, db, r); err != nil {
		t.Fatal(err)
	}
	if _, err := insertRequestRow(ctx, db, requestRowAs(full, true)); err != nil {
		t.Fatal(err)
	}
	row := func(id string) map[string]any {
		rows, err := db.QueryContext(ctx, `SELECT * FROM requests WHERE id = $1`, id)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		if !rows.Next() {
			t.Fatalf("no row %s", id)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for i, c := range cols {
			if c != "id" && c != "call_id" {
				m[c] = vals[i]
			}
		}
		return m
	}
	if a, b := row("r-short"), row("r-full"); !reflect.DeepEqual(a, b) {
		t.Fatalf("short INSERT stored\n%v\nfull INSERT stored\n%v", a, b)
	}
	// Any column outside the short INSERT set takes the full one.
	d := Deny
	for name, change := range map[string]func(*Request){
		"decision": func(r *Request) { r.Decision = &d }, "note": func(r *Request) { r.Note = "n" },
		"token": func(r *Request) { r.TokenID = "t1" }, "quorum": func(r *Request) { r.Quorum = 2 },
		"approvers":        func(r *Request) { r.Approvers = []string{"telegram:1"} },
		"escalation":       func(r *Request) { r.Status, r.EscalateAfter = StatusPending, time.Minute },
		"reminder":         func(r *Request) { r.Status, r.RemindEvery = StatusPending, time.Minute },
		"grant_expires_at": func(r *Request) { r.GrantExpiresAt = &now },
	} {
		c := r
		change(&c)
		if requestRow(c).query != insertRequest {
			t.Errorf("%s set: want the full INSERT", name)
		}
	}
}

// TestAppendJSON_TraceEncodedOnce: a request whose trace and verdict
// Submit encoded answers with the same bytes as one encoded from its Trace
// and Vaglio, and its row stores the same text, with or without a verdict.
func TestAppendJSON_TraceEncodedOnce(t *testing.T) {
	for _, v := range []*vaglio.Verdict{nil, {Approved: false, Reason: `path "/etc<x>"`, BlockedBy: "guard"}} {
		r := Request{ID: "r1", Status: StatusAllowed, Vaglio: v, Trace: []policy.Step{
			{Layer: "profile", Detail: `agent "a<b>": requested default`},
			{Layer: "table", Outcome: policy.Allowed, Detail: "llm:local at Full"},
		}}
		cached := r
		cached.encoded = encodeJSON(&cached)
		if got, want := string(cached.AppendJSON(nil)), string(r.AppendJSON(nil)); got != want {
			t.Fatalf("with the encoded trace:\n%s\nwithout:\n%s", got, want)
		}
		if got, want := cached.traceText(), string(policy.AppendTraceJSON(nil, r.Trace)); got != want {
			t.Fatalf("stored trace %s, want %s", got, want)
		}
		if got, want := requestRow(cached).args, requestRow(r).args; !reflect.DeepEqual(got, want) {
			t.Fatalf("row args %v, want %v", got, want)
		}
	}
}

// insertRequestTx inserts r through q, as a submission does.
func insertRequestTx(ctx context.Context, q storage.Querier, r Request) (bool, error) {
	return insertRequestRow(ctx, q, requestRow(r))
}

// TestWord_SameStringNoAllocation: word gives back the string it is given,
// and boxes the fixed words of a row without an allocation.
func TestWord_SameStringNoAllocation(t *testing.T) {
	fixed := []string{string(StatusPending), string(StatusAllowed), string(StatusDenied),
		string(policy.Allowed), string(policy.Denied), string(policy.ApprovalRequired),
		policy.ReadOnly.String(), policy.Supervised.String(), policy.Full.String(), "policy"}
	for _, s := range append(fixed, string(StatusExpired), "telegram:Roberto (42)", "") {
		if got := word(s); got != any(s) {
			t.Errorf("word(%q) = %v", s, got)
		}
	}
	var sink any
	for _, s := range fixed {
		b := []byte(s) // not a constant: as a row's field is
		v := string(b)
		if n := testing.AllocsPerRun(100, func() { sink = word(v) }); n != 0 {
			t.Errorf("word(%q): %v allocations", s, n)
		}
	}
	_ = sink
}
