package policy

import "strings"

// CapabilityOutcome is one line of "what may I use" (GET /v1/capabilities,
// Executor's tools.list): what a request for the capability gets at the
// agent's ceiling, before any target is known.
type CapabilityOutcome struct {
	Name            string     `json:"name"`
	Outcome         Outcome    `json:"outcome"`
	Critical        bool       `json:"critical"`
	TargetKind      TargetKind `json:"target_kind"`
	DefaultApproval Approval   `json:"default_approval"`
	// Targets, for a child token that may ask only for some targets of the
	// capability, lists its patterns.
	Targets []string `json:"targets,omitempty"`
}

// capabilityWide reports whether a rule covers every target of a
// capability: a target of only stars ("*", "**").
func capabilityWide(r Rule) bool { return strings.Trim(strings.TrimSpace(r.Target), "*") == "" }

// Capabilities says, for every capability of the registry in registry
// order, what the table says at the profile's ceiling after the profile
// (allow and deny lists) and any capability-wide block rule (target "*")
// that applies to the agent and its principal (channel, sender), and the
// agent's mode (restrict: denied where a person would be asked). Denied
// capabilities are left out unless includeBlocked.
func Capabilities(rules []Rule, p Profile, channel, sender string, includeBlocked bool) []CapabilityOutcome {
	out := []CapabilityOutcome{}
	for _, c := range Registry() {
		o := TableOutcome(p.Ceiling, c)
		if !p.Permits(c.Name) {
			o = Denied
		}
		if o != Denied {
			for _, r := range rules {
				if r.Action == ActionBlock && capabilityWide(r) && r.MatchesCapability(c.Name) &&
					(r.Agent == "" || r.Agent == p.Agent) && (r.Channel == "" || r.Channel == channel) &&
					(r.SenderID == "" || r.SenderID == sender) {
					o = Denied
					break
				}
			}
		}
		o = p.Mode.Apply(o)
		if o == Denied && !includeBlocked {
			continue
		}
		out = append(out, CapabilityOutcome{Name: c.Name, Outcome: o, Critical: c.Critical, TargetKind: c.TargetKind,
			DefaultApproval: c.DefaultApproval, Targets: p.Targets[c.Name]})
	}
	return out
}
