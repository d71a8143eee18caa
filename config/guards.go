package config

import (
	"github.com/metnos/gateway/policy"
)

// RouteOf is the number (1-based) and the route a request of agent for
// capability c takes, the first that matches; 0 when none does.
func (c Config) RouteOf(agent string, cp policy.Capability) (int, Route) {
	for i, rt := range c.Approvals.Routes {
		spec := policy.RouteSpec{Capability: rt.Capability, Agent: rt.Agent, Critical: rt.Critical}
		if spec.Matches(agent, cp.Name, cp.Critical) {
			return i + 1, rt
		}
	}
	return 0, Route{}
}

// Guards returns the guarded routes (policy.Guard) that some request
// would take of agent ("" = any configured agent) for a capability that
// match accepts: what a rule or grant without a route cannot lift. Each
// guard appears once, in route order.
func (c Config) Guards(agent string, match func(policy.Capability) bool) []*policy.Guard {
	agents := []string{agent}
	if agent == "" {
		agents = agents[:0]
		for _, a := range c.Agents {
			agents = append(agents, a.ID)
		}
	}
	seen := map[int]bool{}
	for _, cp := range policy.Registry() {
		if !match(cp) {
			continue
		}
		for _, a := range agents {
			if n, rt := c.RouteOf(a, cp); n > 0 && rt.Guard(n) != nil {
				seen[n] = true
			}
		}
	}
	var out []*policy.Guard
	for i, rt := range c.Approvals.Routes {
		if seen[i+1] {
			out = append(out, rt.Guard(i+1))
		}
	}
	return out
}

// RuleGuards is Guards for an approve rule: the guarded routes whose
// requests it would match but cannot lift (nil for any other action).
func (c Config) RuleGuards(r policy.Rule) []*policy.Guard {
	if r.Action != policy.ActionApprove {
		return nil
	}
	return c.Guards(r.Agent, func(cp policy.Capability) bool { return r.MatchesCapability(cp.Name) })
}

// NotLifted is what a rule or grant says about the guarded routes it
// cannot lift, one line each ("does not apply to requests on route 2:
// quorum 2, passkey"); nil for none.
func NotLifted(guards []*policy.Guard) []string {
	var out []string
	for _, g := range guards {
		out = append(out, g.NotLifted())
	}
	return out
}
