package policy_test

import (
	"testing"

	"github.com/metnos/gateway/policy"
)

func outcomes(list []policy.CapabilityOutcome) map[string]policy.Outcome {
	m := map[string]policy.Outcome{}
	for _, c := range list {
		m[c.Name] = c.Outcome
	}
	return m
}

func TestCapabilities_TableProfileAndWideBlocks(t *testing.T) {
	rules := []policy.Rule{
		{Capability: "network:http", Target: "*", Action: policy.ActionBlock},                    // wide, for everyone
		{Capability: "fs:*", Target: "/etc/**", Action: policy.ActionBlock},                      // not capability-wide
		{Capability: "llm:online", Target: "*", Action: policy.ActionBlock, Agent: "other"},      // another agent's
		{Capability: "time:read", Target: "**", Action: policy.ActionBlock, SenderID: "roberto"}, // this principal's
		{Capability: "calendar:read", Target: "*", Action: policy.ActionBlock, SenderID: "anna"}, // another principal's
		{Capability: "parse:local", Target: "*", Action: policy.ActionRequireApproval},           // not a block
	}
	p := policy.Profile{Agent: "metnos", Ceiling: policy.ReadOnly, Deny: []string{"mail:read"}}
	all := policy.Capabilities(rules, p, "telegram", "roberto", true)
	if len(all) != len(policy.Registry()) {
		t.Fatalf("include_blocked lists %d, want all %d", len(all), len(policy.Registry()))
	}
	for i, c := range all {
		reg := policy.Registry()[i]
		if c.Name != reg.Name || c.Critical != reg.Critical || c.TargetKind != reg.TargetKind || c.DefaultApproval != reg.DefaultApproval {
			t.Errorf("line %d: %+v, registry %+v", i, c, reg)
		}
	}
	got := outcomes(all)
	want := map[string]policy.Outcome{
		"fs:read": policy.ApprovalRequired, "fs:write": policy.Denied, "code:exec": policy.Denied,
		"network:http": policy.Denied, "llm:local": policy.Allowed, "llm:online": policy.Denied,
		"mail:read": policy.Denied, "mail:send": policy.Denied, "channel:in": policy.Allowed,
		"channel:out": policy.Denied, "time:read": policy.Denied, "parse:local": policy.Allowed,
		"calendar:read": policy.ApprovalRequired,
	}
	for name, o := range want {
		if got[name] != o {
			t.Errorf("%s: %s, want %s", name, got[name], o)
		}
	}
	// Without include_blocked the denied ones are left out.
	for _, c := range policy.Capabilities(rules, p, "telegram", "roberto", false) {
		if c.Outcome == policy.Denied {
			t.Errorf("%s listed although denied", c.Name)
		}
	}
	// At Full the wide block still hides network:http; llm:online is someone else's block.
	p.Ceiling = policy.Full
	got = outcomes(policy.Capabilities(rules, p, "telegram", "roberto", false))
	if _, ok := got["network:http"]; ok {
		t.Error("network:http listed despite a capability-wide block")
	}
	if got["llm:online"] != policy.Allowed || got["fs:write"] != policy.Allowed || got["code:exec"] != policy.ApprovalRequired {
		t.Errorf("at Full: %v", got)
	}
	// An allow list, and a token's allow list narrowed to nothing.
	p.Allow = []string{"fs:read"}
	if got := policy.Capabilities(rules, p, "telegram", "roberto", false); len(got) != 1 || got[0].Name != "fs:read" {
		t.Errorf("allow list: %+v", got)
	}
	p.Allow, p.AllowNone = nil, true
	if got := policy.Capabilities(rules, p, "telegram", "roberto", false); len(got) != 0 {
		t.Errorf("allow none: %+v", got)
	}
}
