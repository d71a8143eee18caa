package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
)

// TestAPI_PolicyStepUp: with [web] policy_step_up = "passkey" the admin
// agent's API adds no approve rule and no grant, nor turns a rule into an
// approve rule (403 step_up_required, nothing written); a block or
// require_approval rule, which only tightens, is still its to add.
func TestAPI_PolicyStepUp(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{mutate: func(c *config.Config) { c.Web.PolicyStepUp = config.StepUpPasskey }})
	for _, tc := range []struct {
		method, path string
		body         jsonBody
	}{
		{"POST", "/v1/policy/rules", jsonBody{"capability": "fs:read", "target": "/srv/**", "action": "approve"}},
		{"POST", "/v1/grants", jsonBody{"channel": "web", "sender_id": "a1", "capability": "fs:read", "target": "/srv/**"}},
	} {
		r := g.want(t, http.StatusForbidden, tc.method, tc.path, tokAdmin, tc.body)
		if !strings.Contains(string(r.Body), `"step_up_required"`) {
			t.Errorf("%s %s: %s, want step_up_required", tc.method, tc.path, r.Body)
		}
	}
	added := g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "fs:read", "target": "/srv/**", "action": "require_approval"})
	var rule struct{ ID string }
	decodeInto(t, string(added.Body), &rule)
	r := g.want(t, http.StatusForbidden, "PATCH", "/v1/policy/rules/"+rule.ID, tokAdmin, jsonBody{"action": "approve"})
	if !strings.Contains(string(r.Body), `"step_up_required"`) {
		t.Errorf("PATCH to approve: %s, want step_up_required", r.Body)
	}
	var list struct{ Grants []any }
	decodeInto(t, string(g.want(t, http.StatusOK, "GET", "/v1/grants", tokAdmin, nil).Body), &list)
	var rules struct {
		Rules []struct{ Source, Action string }
	}
	decodeInto(t, string(g.want(t, http.StatusOK, "GET", "/v1/policy/rules", tokAdmin, nil).Body), &rules)
	var api []string
	for _, r := range rules.Rules {
		if r.Source == "api" {
			api = append(api, r.Action)
		}
	}
	if len(list.Grants) != 0 || len(api) != 1 || api[0] != "require_approval" {
		t.Errorf("after the refusals: grants %v, run-time rules %v; want none and the require_approval rule", list.Grants, api)
	}
}
