package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func decodeRule(tb testing.TB, r apiResult) policy.RuleInfo {
	tb.Helper()
	var ri policy.RuleInfo
	if err := json.Unmarshal(r.Body, &ri); err != nil {
		tb.Fatalf("decode rule from %s: %v", r.Body, err)
	}
	return ri
}

func listRules(tb testing.TB, g *e2eGateway) []policy.RuleInfo {
	tb.Helper()
	var out struct {
		Rules []policy.RuleInfo `json:"rules"`
	}
	if err := json.Unmarshal(g.want(tb, http.StatusOK, "GET", "/v1/policy/rules", tokAdmin, nil).Body, &out); err != nil {
		tb.Fatal(err)
	}
	return out.Rules
}

func TestAPI_Rules_CRUDTakesEffectAtOnce(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	// Admins only.
	g.want(t, http.StatusForbidden, "GET", "/v1/policy/rules", tokA1, nil)
	g.want(t, http.StatusForbidden, "POST", "/v1/policy/rules", tokA1,
		jsonBody{"capability": "fs:write", "target": "*", "action": "block"})
	g.want(t, http.StatusUnauthorized, "GET", "/v1/policy/rules", "", nil)

	rules := listRules(t, g)
	if len(rules) != 1 || rules[0].ID != "config:1" || rules[0].Source != "config" || rules[0].Owner != "org" ||
		rules[0].Position != 1 || rules[0].Target != "*password*" || rules[0].CreatedBy != "config" {
		t.Fatalf("initial rules: %+v", rules)
	}

	ask := func(call string) string {
		t.Helper()
		r := g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"call_id": call, "capability": "llm:online"})
		return string(r.request(t).Status)
	}
	if s := ask("c1"); s != "pending" {
		t.Fatalf("before any rule: %s", s)
	}
	// An approve rule scoped to a1 lifts approval_required on the very next request.
	r := g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "llm:online", "target": "*", "action": "approve", "agent": "a1"})
	ri := decodeRule(t, r)
	if ri.Source != "api" || ri.Owner != "user" || ri.Position != 1 || ri.CreatedBy != "api:admin" || ri.CreatedAt == nil {
		t.Fatalf("added rule: %s", r.Body)
	}
	if s := ask("c2"); s != "allowed" {
		t.Fatalf("after the approve rule: %s", s)
	}
	// PATCH the action: block.
	r = g.want(t, http.StatusOK, "PATCH", "/v1/policy/rules/"+ri.ID, tokAdmin, jsonBody{"action": "block"})
	if got := decodeRule(t, r); got.Action != policy.ActionBlock || got.ID != ri.ID {
		t.Fatalf("patched rule: %s", r.Body)
	}
	if s := ask("c3"); s != "denied" {
		t.Fatalf("after the block: %s", s)
	}
	// DELETE.
	r = g.want(t, http.StatusOK, "DELETE", "/v1/policy/rules/"+ri.ID, tokAdmin, nil)
	if string(r.Body) != "{\"removed\":true}\n" {
		t.Fatalf("delete answered %s", r.Body)
	}
	if s := ask("c4"); s != "pending" {
		t.Fatalf("after the delete: %s", s)
	}
	g.want(t, http.StatusNotFound, "DELETE", "/v1/policy/rules/"+ri.ID, tokAdmin, nil)

	// Positions: a new rule goes to the top by default; "bottom" and numbers work.
	a := decodeRule(t, g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "fs:*", "target": "/etc/**", "action": "block"}))
	b := decodeRule(t, g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "network:http", "target": "*.example.com", "action": "approve", "position": "bottom"}))
	c := decodeRule(t, g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "mail:read", "target": "*", "action": "require_approval", "position": 2}))
	d := decodeRule(t, g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "time:read", "target": "*", "action": "block"}))
	var ids []string
	for _, ri := range listRules(t, g) {
		ids = append(ids, ri.ID)
	}
	if want := []string{d.ID, a.ID, c.ID, b.ID, "config:1"}; !equalStrings(ids, want) {
		t.Fatalf("order %v, want %v", ids, want)
	}
	moved := decodeRule(t, g.want(t, http.StatusOK, "PATCH", "/v1/policy/rules/"+b.ID, tokAdmin, jsonBody{"position": "top"}))
	if moved.Position != 1 {
		t.Errorf("moved rule at %d", moved.Position)
	}

	// Every change is an audit row.
	rows, err := storage.ListAudit(context.Background(), g.App.DB, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range rows {
		counts[e.Event]++
	}
	if counts[storage.AuditRuleAdded] != 5 || counts[storage.AuditRuleChanged] != 2 || counts[storage.AuditRuleRemoved] != 1 {
		t.Errorf("audit counts %v", counts)
	}
	// "position": null is no position: the rule stays where it is.
	stay := decodeRule(t, g.want(t, http.StatusOK, "PATCH", "/v1/policy/rules/"+c.ID, tokAdmin,
		jsonBody{"position": nil, "action": "block"}))
	if stay.Position != 4 || stay.Action != "block" {
		t.Errorf("PATCH with position null: at %d, %s; want 4 (unmoved), block", stay.Position, stay.Action)
	}
}

func TestAPI_Rules_Errors(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	for _, tc := range []struct {
		name string
		body jsonBody
		code string
	}{
		{"unknown capability", jsonBody{"capability": "fs:wirte", "target": "*", "action": "block"}, "invalid_capability"},
		{"unknown action", jsonBody{"capability": "fs:write", "target": "*", "action": "alow"}, "invalid_action"},
		{"approve * on code:exec", jsonBody{"capability": "code:exec", "target": "*", "action": "approve"}, "invalid_target"},
		{"approve * on mail:send", jsonBody{"capability": "mail:send", "target": "*", "action": "approve"}, "invalid_target"},
		{"no target", jsonBody{"capability": "fs:write", "action": "block"}, "invalid_target"},
		{"unknown agent", jsonBody{"capability": "fs:write", "target": "*", "action": "block", "agent": "ghost"}, "invalid_agent"},
		{"bad position", jsonBody{"capability": "fs:write", "target": "*", "action": "block", "position": "middle"}, "invalid_position"},
		{"zero position", jsonBody{"capability": "fs:write", "target": "*", "action": "block", "position": 0}, "invalid_position"},
		{"unknown field", jsonBody{"capability": "fs:write", "target": "*", "action": "block", "owner": "org"}, "unknown_field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.want(t, http.StatusBadRequest, "POST", "/v1/policy/rules", tokAdmin, tc.body)
			if e := r.apiError(t); e.Error.Code != tc.code {
				t.Errorf("code %q (%s), want %q", e.Error.Code, e.Error.Message, tc.code)
			}
		})
	}
	// The file's rules are read-only.
	for _, method := range []string{"PATCH", "DELETE"} {
		r := g.want(t, http.StatusConflict, method, "/v1/policy/rules/config:1", tokAdmin, jsonBody{"action": "approve"})
		if e := r.apiError(t); e.Error.Code != "rule_from_config" {
			t.Errorf("%s config:1: code %q", method, e.Error.Code)
		}
	}
	g.want(t, http.StatusNotFound, "PATCH", "/v1/policy/rules/api:77", tokAdmin, jsonBody{"action": "block"})
	g.want(t, http.StatusBadRequest, "PATCH", "/v1/policy/rules/x7", tokAdmin, jsonBody{"action": "block"})
	// PATCH cannot change the capability (delete and add instead).
	ri := decodeRule(t, g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "code:exec", "target": "make test", "action": "approve"}))
	g.want(t, http.StatusBadRequest, "PATCH", "/v1/policy/rules/"+ri.ID, tokAdmin, jsonBody{"capability": "fs:write"})
	r := g.want(t, http.StatusBadRequest, "PATCH", "/v1/policy/rules/"+ri.ID, tokAdmin, jsonBody{"target": "*"})
	if e := r.apiError(t); e.Error.Code != "invalid_target" {
		t.Errorf("widening an approve on code:exec to *: %q", e.Error.Code)
	}
	if rules := listRules(t, g); len(rules) != 2 || rules[0].Target != "make test" {
		t.Errorf("rules after refusals: %+v", rules)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReplicas_RuleSeenAtOnce_Postgres: two replicas on one PostgreSQL
// database; a rule added, changed and removed through one decides the very
// next request on the other.
func TestReplicas_RuleSeenAtOnce_Postgres(t *testing.T) {
	dsn := storagetest.FreshSchema(t) // skips, saying why, without a server
	onPG := func(cfg *config.Config) { cfg.Storage.Driver, cfg.Storage.DSN = "postgres", dsn }
	one := startE2E(t, e2eOptions{mutate: onPG})
	two := startE2E(t, e2eOptions{mutate: onPG})
	ask := func(call string) string {
		t.Helper()
		r := two.do(t, "POST", "/v1/requests", tokA1, jsonBody{"call_id": call, "capability": "network:http", "target": "api.example.com"})
		return string(r.request(t).Status)
	}
	if s := ask("r1"); s != "pending" {
		t.Fatalf("before: %s", s)
	}
	ri := decodeRule(t, one.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "network:http", "target": "*.example.com", "action": "approve"}))
	if s := ask("r2"); s != "allowed" {
		t.Fatalf("replica two after the add on replica one: %s", s)
	}
	one.want(t, http.StatusOK, "PATCH", "/v1/policy/rules/"+ri.ID, tokAdmin, jsonBody{"action": "block"})
	if s := ask("r3"); s != "denied" {
		t.Fatalf("replica two after the change on replica one: %s", s)
	}
	one.want(t, http.StatusOK, "DELETE", "/v1/policy/rules/"+ri.ID, tokAdmin, nil)
	if s := ask("r4"); s != "pending" {
		t.Fatalf("replica two after the delete on replica one: %s", s)
	}
	if rules := listRules(t, two); len(rules) != 1 || rules[0].Source != "config" {
		t.Errorf("replica two lists %+v", rules)
	}
}
