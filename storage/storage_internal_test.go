package storage

import (
	"context"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/jsonw/jsonwtest"
)

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

// TestAuditQuery_UsesIndexes: a request's trail is read through
// audit_request and an agent's through audit_agent, not by walking the
// whole chain (the filters used to be written as "$n = ” OR column = $n",
// which no index can serve).
func TestAuditQuery_UsesIndexes(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		f     AuditFilter
		index string
	}{
		{AuditFilter{RequestID: "r1"}, "audit_request"},
		{AuditFilter{RequestID: "r1", Newest: true, Limit: 5}, "audit_request"},
		{AuditFilter{Agent: "a1", Limit: 20}, "audit_agent"},
		{AuditFilter{Event: "decided", After: 10}, "audit_seq"},
	} {
		query, args := auditQuery(db.Dialect, c.f)
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+anonymous(query), args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "; "); !strings.Contains(got, "USING INDEX "+c.index) {
			t.Errorf("%+v: plan %q, want it to use %s", c.f, got, c.index)
		}
	}
}

// TestMarshalDetail_AsMarshal: the hand-written detail of strings is
// json.Marshal's, byte for byte (the chain's hash covers it); other
// details go to json.Marshal.
func TestMarshalDetail_AsMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 5000 {
		d := map[string]any{}
		for range r.IntN(14) {
			d[jsonwtest.RandomString(r)] = jsonwtest.RandomString(r)
		}
		if r.IntN(5) == 0 {
			d["n"] = r.IntN(100)
		}
		got, err := marshalDetail(d)
		want, _ := json.Marshal(d)
		if err != nil || string(got) != string(want) {
			t.Fatalf("marshalDetail(%q) = %s, %v; json.Marshal %s", d, got, err, want)
		}
	}
}

// TestPrepareAuditStrings_AsPrepareAudit: the pairs give the record the
// map gives (the same detail bytes, agent and capability); keys out of
// order, an odd count or no agent are refused.
func TestPrepareAuditStrings_AsPrepareAudit(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for range 2000 {
		kv := map[string]string{"agent": jsonwtest.RandomString(r) + "a", "capability": "fs:read"}
		for range r.IntN(6) {
			kv[jsonwtest.RandomString(r)] = jsonwtest.RandomString(r)
		}
		keys := slices.Sorted(maps.Keys(kv))
		var pairs []string
		detail := map[string]any{}
		for _, k := range keys {
			pairs = append(pairs, k, kv[k])
			detail[k] = kv[k]
		}
		e := AuditEvent{At: time.Unix(1, 0), Actor: "agent:x", Event: AuditOutcome, RequestID: "r1"}
		got, err := PrepareAuditStrings(e, pairs...)
		if err != nil {
			t.Fatal(err)
		}
		e.Detail = detail
		want, err := PrepareAudit(e)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.detail) != string(want.detail) || got.agent != want.agent || got.capability != want.capability {
			t.Fatalf("pairs %q: %s %q %q; map: %s %q %q", pairs, got.detail, got.agent, got.capability,
				want.detail, want.agent, want.capability)
		}
	}
	e := AuditEvent{Actor: "agent:x", Event: AuditOutcome}
	for _, bad := range [][]string{
		{"capability", "c", "agent", "a"},               // out of order
		{"agent", "a", "capability"},                    // odd
		{"capability", "c", "outcome", "allowed"},       // no agent
		{"agent", "a", "agent", "b", "capability", "c"}, // repeated
	} {
		if _, err := PrepareAuditStrings(e, bad...); err == nil {
			t.Errorf("PrepareAuditStrings(%q) took it", bad)
		}
	}
}
