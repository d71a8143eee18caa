package approvals

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/metnos/gateway/policy"
)

// Route sends matching requests to the right people ([[approvals.routes]]):
// where the card goes, who may decide, how many must allow, and when the
// card is escalated or a reminder sent. The first matching route wins.
type Route struct {
	Capability string // exact name, "*" or "prefix:*"
	Agent      string // "" = any agent
	Critical   *bool  // nil = any
	Notify     []string
	Approvers  []string // "channel:user"; empty = each channel's own approvers
	Quorum     int      // distinct allows needed; < 1 means 1
	// EscalateAfter > 0 posts the card also to EscalateTo when the request
	// is still pending after it.
	EscalateAfter time.Duration
	EscalateTo    []string
	// RemindEvery > 0 reminds the approvers this often while pending.
	RemindEvery time.Duration
	// StepUp "passkey" makes every allow need a passkey assertion
	// (Actor.Passkey) over the request and the decision; Deny stays a tap.
	StepUp string
	// Guard is set on a guarded route (quorum > 1 or a step-up): see
	// policy.Guard. The gateway sets it from the route's number.
	Guard *policy.Guard
}

// StepUpPasskey is a route's step_up that asks each allow for a passkey.
const StepUpPasskey = "passkey"

// Matches reports whether the route applies to a request of agent for the
// capability.
func (rt Route) Matches(agent, capability string, critical bool) bool {
	return policy.RouteSpec{Capability: rt.Capability, Agent: rt.Agent, Critical: rt.Critical}.Matches(agent, capability, critical)
}

// route returns the first route matching the request, if any.
func (s *Service) route(agent, capability string, critical bool) (Route, bool) {
	for _, rt := range s.opts.Routes {
		if rt.Matches(agent, capability, critical) {
			return rt, true
		}
	}
	return Route{}, false
}

// GuardOf is the guard of the route a request of agent for capability
// takes, nil when that route guards nothing (or none matches, or the
// capability is unknown: the decision refuses it anyway).
func (s *Service) GuardOf(agent, capability string) *policy.Guard {
	c, err := policy.Lookup(capability)
	if err != nil {
		return nil
	}
	rt, ok := s.route(agent, c.Name, c.Critical)
	if !ok {
		return nil
	}
	return rt.Guard
}

// routeKey is the guard key a grant written by deciding r carries: its
// route's, when r was decided that route's way (its approvers, at least
// its quorum, its step-up); else "". A route edited since r was created
// gets nothing: its grants start afresh.
func (s *Service) routeKey(r Request) string {
	rt, ok := s.route(r.Agent, r.Capability, r.Critical)
	if !ok || rt.Guard == nil || r.Quorum < max(rt.Quorum, 1) || !slices.Equal(r.Approvers, rt.Approvers) ||
		rt.StepUp == StepUpPasskey && r.StepUp != StepUpPasskey {
		return ""
	}
	return rt.Guard.Key
}

// Guarded reports whether r is on a guarded route (a quorum above 1 or a
// step-up): no grant for every agent is offered on it.
func (r Request) Guarded() bool { return r.Quorum > 1 || r.StepUp != "" }

// applyRoute fills what the route says into a new pending request.
func (s *Service) applyRoute(r *Request, notify []string) {
	r.Quorum = 1
	rt, ok := s.route(r.Agent, r.Capability, r.Critical)
	if ok {
		if len(rt.Notify) > 0 {
			notify = rt.Notify
		}
		r.Quorum = max(rt.Quorum, 1)
		r.Approvers = append([]string(nil), rt.Approvers...)
		if rt.EscalateAfter > 0 && len(rt.EscalateTo) > 0 {
			r.EscalateAfter, r.EscalateTo = rt.EscalateAfter, append([]string(nil), rt.EscalateTo...)
		}
		r.RemindEvery = rt.RemindEvery
		if rt.StepUp == StepUpPasskey {
			r.StepUp = StepUpPasskey
		}
	}
	for _, n := range notify {
		if n = s.cardChannel(n); n != "" && !contains(r.Notify, n) {
			r.Notify = append(r.Notify, n)
		}
	}
}

// cardChannel is the registered notifier a notify entry puts cards on:
// "web" is the page itself (no card), or the web users' devices when Web
// Push is registered; "" when none.
func (s *Service) cardChannel(n string) string {
	if n == ChannelWeb {
		n = ChannelWebPush
	}
	if s.notifiers[n] == nil {
		return ""
	}
	return n
}

// MayDecide says whether by may decide r (nil), as Decide will check it:
// the web page asks before it has a passkey sign anything.
func (s *Service) MayDecide(ctx context.Context, r Request, by Actor) error {
	return s.authorize(ctx, r, by)
}

// authorize checks that by may decide r: one of the route's approvers (a
// member of a group the route names counts), else, with no approvers in
// the route, an approver of the channel used.
func (s *Service) authorize(ctx context.Context, r Request, by Actor) error {
	err := s.approverOf(ctx, r, by)
	if err != nil && by.Outsider {
		return fmt.Errorf("%w: %w", ErrOutsider, err)
	}
	return err
}

// approverOf is authorize's check, before it says whether a refused
// person is an outsider.
func (s *Service) approverOf(ctx context.Context, r Request, by Actor) error {
	if len(r.Approvers) == 0 {
		if by.Outsider {
			return fmt.Errorf("%w: %s", ErrNotApprover, by.Identity())
		}
		return nil
	}
	id := by.Identity()
	for _, a := range r.Approvers {
		if a == id {
			return nil
		}
	}
	// Groups last: resolving one may call the messenger's API.
	n, _ := s.notifiers[by.Channel].(GroupResolver)
	if n == nil {
		return fmt.Errorf("%w: %s", ErrNotApprover, id)
	}
	for _, a := range r.Approvers {
		ch, group, _ := strings.Cut(a, ":")
		if ch != by.Channel || !n.IsGroup(group) {
			continue
		}
		in, err := n.InGroup(ctx, group, by.ID)
		if err != nil {
			// Fail closed: a group we cannot read admits nobody.
			s.log.Warn("could not read a user group; its members are refused meanwhile", "group", group, "err", err)
			continue
		}
		if in {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrNotApprover, id)
}
