package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Guard is a guarded route a request is on: a route with a quorum above 1
// or a step-up ([[approvals.routes]]). Its requests are lifted only by what
// was itself decided the route's way: a grant written by a decision on the
// route carries the route's Key and applies to it; no approve rule, and no
// grant without that key, does (Decide traces why).
type Guard struct {
	// Key identifies the route and what it demands: its number and a
	// digest of what it matches and who decides how. A grant carries it;
	// a route edited or moved has another key, so the grant no longer
	// lifts its requests (fail closed).
	Key string
	// Label is what people read: "route 2: quorum 2, passkey".
	Label string
}

// RouteSpec is what of a route its guard depends on.
type RouteSpec struct {
	Number     int // 1-based, in file order
	Capability string
	Agent      string
	Critical   *bool
	Approvers  []string
	Quorum     int
	StepUp     string
}

// Matches reports whether the route applies to a request of agent for the
// capability: its capability exact, "*" or "prefix:*", its agent ("" any),
// its critical (nil any).
func (rt RouteSpec) Matches(agent, capability string, critical bool) bool {
	if rt.Agent != "" && rt.Agent != agent {
		return false
	}
	if rt.Critical != nil && *rt.Critical != critical {
		return false
	}
	switch {
	case rt.Capability == "*":
		return true
	case strings.HasSuffix(rt.Capability, ":*"):
		return strings.HasPrefix(capability, strings.TrimSuffix(rt.Capability, "*"))
	}
	return rt.Capability == capability
}

// GuardOf returns the guard of a route, or nil when the route guards
// nothing (quorum 1, no step-up).
func GuardOf(rt RouteSpec) *Guard {
	if rt.Quorum <= 1 && rt.StepUp == "" {
		return nil
	}
	var parts []string
	if rt.Quorum > 1 {
		parts = append(parts, fmt.Sprintf("quorum %d", rt.Quorum))
	}
	if rt.StepUp != "" {
		parts = append(parts, rt.StepUp)
	}
	crit := "any"
	if rt.Critical != nil {
		crit = fmt.Sprint(*rt.Critical)
	}
	h := sha256.New()
	// Each field is length-prefixed, so no two routes share an encoding.
	for _, f := range append([]string{rt.Capability, rt.Agent, crit, fmt.Sprint(rt.Quorum), rt.StepUp}, rt.Approvers...) {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return &Guard{
		Key:   fmt.Sprintf("%d:%s", rt.Number, hex.EncodeToString(h.Sum(nil))[:16]),
		Label: fmt.Sprintf("route %d: %s", rt.Number, strings.Join(parts, ", ")),
	}
}

// NotLifted is what a rule or grant that cannot lift a guarded route's
// requests says about it: "does not apply to requests on route 2: quorum
// 2, passkey".
func (g *Guard) NotLifted() string { return "does not apply to requests on " + g.Label }
