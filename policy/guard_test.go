package policy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
)

// TestDecide_GuardedRoute: on a guarded route no approve rule lifts a
// request, nor any grant but one that route's decision wrote for the
// request's agent; the trace says why. Off the route, the same rule and
// grants apply as before, and a grant of another agent never does.
func TestDecide_GuardedRoute(t *testing.T) {
	s, _ := newStore(t, newClock().Now)
	guard := policy.GuardOf(policy.RouteSpec{Number: 2, Capability: "fs:write", Approvers: []string{"web:a", "web:b"},
		Quorum: 2, StepUp: "passkey"})
	if guard == nil || guard.Label != "route 2: quorum 2, passkey" {
		t.Fatalf("guard %+v", guard)
	}
	if policy.GuardOf(policy.RouteSpec{Number: 1, Capability: "*", Quorum: 1}) != nil {
		t.Fatal("a route with quorum 1 and no step-up is guarded")
	}
	edited := policy.GuardOf(policy.RouteSpec{Number: 2, Capability: "fs:write", Approvers: []string{"web:a", "web:c"},
		Quorum: 2, StepUp: "passkey"})
	if edited.Key == guard.Key {
		t.Fatal("a route with other approvers has the same key")
	}
	g := func(target, agent, route string) policy.Grant {
		return record(t, s, policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: target, TTL: time.Hour,
			Agent: agent, Route: route})
	}
	everyAgent := g("/home/r/a/*", "", "")
	agentOnly := g("/home/r/b/*", "metnos", "")
	_ = g("/home/r/c/*", "other", guard.Key) // another agent's, of the route
	ofRoute := g("/home/r/d/*", "metnos", guard.Key)
	if _, err := s.Record(t.Context(), policy.NewGrant{Principal: roberto, Capability: "fs:write", Target: "/x/*",
		GrantedBy: "r", TTL: time.Hour, Route: guard.Key}); err == nil {
		t.Error("a route's grant for every agent was recorded")
	}
	d := &policy.Decider{Grants: s, Norm: testNorm, Rules: indexed(rule("fs:write", "/home/r/e/**", policy.ActionApprove))}
	for _, tc := range []struct {
		target  string
		guard   *policy.Guard
		want    policy.Outcome
		grantID int64
		why     string
	}{
		{"/home/r/a/x", nil, A, everyAgent.ID, ""},
		{"/home/r/b/x", nil, A, agentOnly.ID, ""},
		{"/home/r/c/x", nil, AR, 0, ""}, // another agent's, route or not
		{"/home/r/d/x", nil, A, ofRoute.ID, ""},
		{"/home/r/e/x", nil, A, 0, ""},
		{"/home/r/a/x", guard, AR, 0, "any other grant does not apply to requests on route 2: quorum 2, passkey"},
		{"/home/r/b/x", guard, AR, 0, "any other grant does not apply"},
		{"/home/r/c/x", guard, AR, 0, "any other grant does not apply"},
		{"/home/r/d/x", guard, A, ofRoute.ID, ""},
		{"/home/r/d/x", edited, AR, 0, "any other grant does not apply"},
		{"/home/r/e/x", guard, AR, 0, "rule #1 does not apply to requests on route 2: quorum 2, passkey"},
	} {
		in := input(policy.Supervised, "fs:write", tc.target)
		in.Guard = tc.guard
		dec := decide(t, d, in)
		var trace strings.Builder
		for _, st := range dec.Trace {
			trace.WriteString(st.Detail + "\n")
		}
		if dec.Outcome != tc.want || dec.GrantID != tc.grantID || !strings.Contains(trace.String(), tc.why) {
			t.Errorf("%s guarded %v: %s grant %d, want %s grant %d; trace:\n%s", tc.target, tc.guard != nil,
				dec.Outcome, dec.GrantID, tc.want, tc.grantID, trace.String())
		}
	}
}
