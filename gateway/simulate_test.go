package gateway_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/replay"
)

// TestAPI_Simulate: POST /v1/policy/simulate reports exactly the stored
// requests a rule change would flip, with before (the outcome on arrival)
// and after, and counts per pair; it stores nothing; removing a rule and
// raising a level are replayed too; bad input is a 400 naming the field.
func TestAPI_Simulate(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	ask := func(call, capability, target string) approvals.Request {
		t.Helper()
		return g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"call_id": call, "capability": capability, "target": target,
			"intent": "read the report", "executor": "report_reader"}).request(t)
	}
	in1 := ask("c1", "fs:read", "/srv/data/a.csv")
	in2 := ask("c2", "fs:read", "/srv/data/b.csv")
	ask("c3", "fs:read", "/srv/other/c.csv")       // not under the new rule
	ask("c4", "fs:read", "/srv/data/password.csv") // the block rule keeps it denied
	ask("c5", "llm:local", "")                     // allowed already
	g.want(t, http.StatusForbidden, "POST", "/v1/policy/simulate", tokA1, jsonBody{})

	sim := func(body jsonBody) replay.Result {
		t.Helper()
		r := g.want(t, http.StatusOK, "POST", "/v1/policy/simulate", tokAdmin, body)
		var out replay.Result
		if err := json.Unmarshal(r.Body, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	res := sim(jsonBody{"since": "7d", "add_rules": []jsonBody{{"capability": "fs:read", "target": "/srv/data/*", "action": "approve"}}})
	var ids []string
	for _, c := range res.Changed {
		ids = append(ids, c.RequestID)
		if c.Before != "approval_required" || c.After != "allowed" || c.Agent != "a1" || c.Capability != "fs:read" {
			t.Errorf("change %+v", c)
		}
	}
	if res.Total != 5 || !slices.Equal(ids, []string{in1.ID, in2.ID}) || res.Counts["approval_required->allowed"] != 2 ||
		res.Counts["approval_required->approval_required"] != 1 || res.Counts["denied->denied"] != 1 || res.Counts["allowed->allowed"] != 1 {
		t.Fatalf("simulate = %+v, want c1 and c2 flipped", res)
	}
	// Read-only: the requests are still pending, and no rule was added.
	if got := g.do(t, "GET", "/v1/requests/"+in1.ID, tokA1, nil).request(t); got.Status != approvals.StatusPending {
		t.Fatalf("simulate changed a request: %s", got.Status)
	}
	if rules := listRules(t, g); len(rules) != 1 {
		t.Fatalf("simulate added a rule: %+v", rules)
	}
	// Removing the block rule flips the password file to approval_required.
	if res := sim(jsonBody{"since": "1h", "remove_rules": []string{"config:1"}}); len(res.Changed) != 1 ||
		res.Changed[0].Before != "denied" || res.Changed[0].After != "approval_required" {
		t.Fatalf("remove config:1: %+v", res)
	}
	// Full for a1: every fs:read is allowed, the blocked one stays denied.
	if res := sim(jsonBody{"levels": map[string]string{"a1": "Full"}}); res.Counts["approval_required->allowed"] != 3 ||
		res.Counts["denied->denied"] != 1 {
		t.Fatalf("levels: %+v", res)
	}
	for _, bad := range []jsonBody{
		{"since": "yesterday"},
		{"remove_rules": []string{"api:99"}},
		{"add_rules": []jsonBody{{"capability": "fs:nope", "target": "*", "action": "approve"}}},
		{"add_rules": []jsonBody{{"capability": "code:exec", "target": "*", "action": "approve"}}},
		{"levels": map[string]string{"ghost": "Full"}},
	} {
		g.want(t, http.StatusBadRequest, "POST", "/v1/policy/simulate", tokAdmin, bad)
	}
}
