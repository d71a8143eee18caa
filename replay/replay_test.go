package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// window is a week of requests as the store returns them, oldest first:
// npm test allowed three times by a person and asked once more, one
// /srv/logs read a person denied.
func window() []approvals.Request {
	allowed := approvals.AllowOnce
	denied := approvals.Deny
	var out []approvals.Request
	add := func(capability, target string, d *approvals.Decision) {
		r := approvals.Request{ID: fmt.Sprintf("r%d", len(out)+1), Agent: "a1", Channel: "web", SenderID: "owner",
			Capability: capability, Target: target, Autonomy: policy.Supervised, Outcome: policy.ApprovalRequired,
			Status: approvals.StatusPending, Decision: d}
		switch {
		case d != nil && *d == approvals.Deny:
			r.Status = approvals.StatusDenied
		case d != nil:
			r.Status = approvals.StatusAllowed
		}
		out = append(out, r)
	}
	for range 3 {
		add("code:exec", "npm test", &allowed)
	}
	add("code:exec", "npm test", nil)
	add("fs:read", "/srv/logs/a.log", &allowed)
	add("fs:read", "/srv/logs/b.log", &allowed)
	add("fs:read", "/srv/logs/c.log", &allowed)
	add("fs:read", "/srv/logs/d.log", &denied)
	return out
}

// TestSuggestAndSimulate_NoServer: the suggestions and a simulation are
// pure functions of the stored requests and the policy, called here with
// neither a database nor HTTP (as the command line may): npm test is
// suggested with what it would have done, the logs family (a person
// denied one) is not; the suggested rule, simulated against the policy as
// it stands, flips the four npm test requests and nothing else.
func TestSuggestAndSimulate_NoServer(t *testing.T) {
	norm := policy.Normalizer{Home: "/home/u"}
	reqs := window()
	sugs := replay.Suggest(norm, reqs, 3)
	if len(sugs) != 1 {
		t.Fatalf("suggestions %+v, want npm test only", sugs)
	}
	s := sugs[0]
	if s.Capability != "code:exec" || s.Target != "npm test" || s.Count != 3 || s.Replay != (replay.Replay{WouldAllow: 4}) {
		t.Errorf("suggestion %+v", s)
	}
	a := config.NewAgent("a1")
	p := replay.Policy{Norm: norm, Agents: []config.Agent{a}}
	res, err := replay.Simulate(context.Background(), p, reqs, replay.Body{Against: "policy", AddRules: []replay.RuleBody{{
		Capability: s.Capability, Target: s.Target, Action: s.Action, Agent: s.Agent, Channel: s.Channel, SenderID: s.SenderID}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != len(reqs) || len(res.Changed) != 4 {
		t.Fatalf("simulation %+v, want the 4 npm test requests of %d changed", res, len(reqs))
	}
	for _, c := range res.Changed {
		if c.Target != "npm test" || c.Before != policy.ApprovalRequired || c.After != policy.Allowed {
			t.Errorf("changed %+v", c)
		}
	}
	if _, err := replay.Simulate(context.Background(), p, reqs, replay.Body{AddRules: []replay.RuleBody{{
		Capability: "code:exec", Target: "npm test", Action: "approve", Agent: "nobody"}}}); err == nil {
		t.Error("a rule scoped to an agent not configured was simulated")
	}
}

// A simulation counts, for each rule it adds, the requests that rule
// would decide (it is the rule that matches them first), whether or not
// their outcome changes: npm test's approve rule decides its four
// requests and changes them; a require_approval rule on one log decides
// that request and changes nothing; a require_approval rule added after
// the approve rule, for the same requests, decides none of them (the
// first match wins, and "bottom" puts each added rule after the last).
func TestSimulate_DecidedPerRule(t *testing.T) {
	reqs := window()
	p := replay.Policy{Norm: policy.Normalizer{Home: "/home/u"}, Agents: []config.Agent{config.NewAgent("a1")}}
	res, err := replay.Simulate(context.Background(), p, reqs, replay.Body{Against: "policy", AddRules: []replay.RuleBody{
		{Capability: "code:exec", Target: "npm test", Action: "approve", Position: []byte(`"bottom"`)},
		{Capability: "fs:read", Target: "/srv/logs/a.log", Action: "require_approval", Position: []byte(`"bottom"`)},
		{Capability: "code:exec", Target: "npm test", Action: "require_approval", Position: []byte(`"bottom"`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"simulated:1": 4, "simulated:2": 1, "simulated:3": 0}
	if len(res.Decided) != len(want) {
		t.Fatalf("decided = %v, want %v", res.Decided, want)
	}
	for id, n := range want {
		if got, ok := res.Decided[id]; !ok || got != n {
			t.Errorf("decided[%s] = %d (%v), want %d", id, got, ok, n)
		}
	}
	if len(res.Changed) != 4 {
		t.Errorf("changed %+v, want the 4 npm test requests", res.Changed)
	}
}
