// Validate's checks of [approvals]: timeouts, Allow for, the digest, and
// each [[approvals.routes]] entry (approvers, quorum, escalation, step-up).

package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/metnos/gateway/policy"
)

// The bounds of a request's timeout (SPEC §5); the default must lie within them.
const (
	minTimeout = 10 * time.Second
	maxTimeout = 24 * time.Hour
)

// maxAllowFor bounds approvals.allow_for: every duration is a button.
const maxAllowFor = 4

func (c *Config) validateApprovals(p *problems) {
	if t := time.Duration(c.Approvals.Timeout); t < minTimeout || t > maxTimeout {
		p.add("approvals.timeout", "%v is out of range (want 10s to 24h)", t)
	}
	if _, err := cron.ParseStandard(c.Approvals.PruneSchedule); err != nil {
		p.add("approvals.prune_schedule", "bad cron spec %q: %v", c.Approvals.PruneSchedule, err)
	}
	if d := c.Approvals.Digest; d != "" {
		if _, err := cron.ParseStandard(d); err != nil {
			p.add("approvals.digest", "bad cron spec %q: %v", d, err)
		} else if !c.digestMessenger() {
			p.add("approvals.digest", "no messenger to post the digest on (%s)", c.digestMessengers())
		}
	}
	positive(p, "approvals.retention", c.Approvals.Retention)
	if t := time.Duration(c.Approvals.SessionTTL); t < time.Second || t > time.Duration(c.Policy.GrantTTL) {
		p.add("approvals.session_ttl", "%v is out of range (want 1s to policy.grant_ttl, %v)", t, c.Policy.GrantTTL)
	}
	if n := len(c.Approvals.AllowFor); n > maxAllowFor {
		p.add("approvals.allow_for", "%d durations (at most %d: each is a button on every card)", n, maxAllowFor)
	}
	for i, d := range c.Approvals.AllowFor {
		key := fmt.Sprintf("approvals.allow_for[%d]", i)
		switch {
		case time.Duration(d) < time.Second:
			p.add(key, "%v is too short (want 1s or more)", d)
		case d > c.Policy.GrantTTL:
			p.add(key, "%v is longer than policy.grant_ttl (%v): use Allow always", d, c.Policy.GrantTTL)
		case slices.Contains(c.Approvals.AllowFor[:i], d):
			p.add(key, "%v is listed twice", d)
		}
	}
	for i, rt := range c.Approvals.Routes {
		c.validateRoute(p, fmt.Sprintf("approvals.routes[%d]", i), rt)
	}
}

// digestMessenger reports whether any configured messenger can post the
// digest.
func (c *Config) digestMessenger() bool {
	for _, name := range c.Messengers() {
		if c.MessengerEnabled(name) {
			return true
		}
	}
	return false
}

// digestMessengers reads the messengers the digest may go to, for its
// problem: "[a], [b] or [c]".
func (c *Config) digestMessengers() string {
	var tables []string
	for _, name := range c.Messengers() {
		tables = append(tables, "["+name+"]")
	}
	if len(tables) == 0 {
		return "none is registered"
	}
	return "configure " + orList(tables)
}

// validateRoute checks one [[approvals.routes]] entry: every channel it
// names is configured, every approver is "channel:user" on one of them, and
// the quorum can be reached.
func (c *Config) validateRoute(p *problems, key string, rt Route) {
	if _, err := policy.CapabilityPattern(rt.Capability); err != nil {
		p.wrap(key+".capability", err)
	}
	if rt.Agent != "" {
		found := false
		for _, a := range c.Agents {
			found = found || a.ID == rt.Agent
		}
		if !found {
			p.add(key+".agent", "no agent %q in [[agents]]", rt.Agent)
		}
	}
	c.notifyChannels(p, key+".notify", rt.Notify)
	seen := map[string]bool{}
	groups := false
	for j, ap := range rt.Approvers {
		ak := fmt.Sprintf("%s.approvers[%d]", key, j)
		ch, user, ok := strings.Cut(ap, ":")
		if seen[ap] {
			p.add(ak, "%q is listed twice", ap)
			continue
		}
		seen[ap] = true
		m := c.Messenger(ch)
		switch {
		case !ok || user == "":
			p.add(ak, "%q is not \"channel:user\" (e.g. %s)", ap, c.approverExamples())
		case m != nil:
			group, err := m.CheckApprover(user)
			switch {
			case !m.Enabled():
				p.add(ak, "%s", notConfigured(ch, m))
			case err != nil:
				p.wrap(ak, err)
			}
			groups = groups || group
		case ch == NotifyWeb:
			if !webLoginRE.MatchString(user) {
				p.add(ak, "bad web login name %q (the web page's login is \"owner\")", user)
			} else if !c.Web.WebUser(user) {
				p.add(ak, "no web user %q in [[web.users]]", user)
			}
		case ch == "agent":
			admin, found := false, false
			for _, a := range c.Agents {
				if a.ID == user {
					found, admin = true, a.Admin
				}
			}
			switch {
			case !found:
				p.add(ak, "no agent %q in [[agents]]", user)
			case !admin:
				p.add(ak, "agent %q is not an admin agent (only admin agents may decide over the API)", user)
			}
		default:
			p.add(ak, "unknown channel %q in %q (want %s)", ch, ap, orList(append(c.Messengers(), NotifyWeb, "agent")))
		}
	}
	switch {
	case rt.Quorum < 1:
		p.add(key+".quorum", "must be at least 1, got %d", rt.Quorum)
	case len(rt.Approvers) > 0 && !groups && rt.Quorum > len(rt.Approvers):
		p.add(key+".quorum", "%d can never be reached: only %d approvers are listed", rt.Quorum, len(rt.Approvers))
	}
	c.checkStepUp(p, key, rt)
	if rt.EscalateAfter != 0 || len(rt.EscalateTo) > 0 {
		switch {
		case time.Duration(rt.EscalateAfter) < MinRouteInterval:
			p.add(key+".escalate_after", "must be at least %v when escalate_to is set, got %v", MinRouteInterval, rt.EscalateAfter)
		case len(rt.EscalateTo) == 0:
			p.add(key+".escalate_to", "required when escalate_after is set (the channels the card also goes to)")
		}
		c.notifyChannels(p, key+".escalate_to", rt.EscalateTo)
	}
	if rt.RemindEvery != 0 && time.Duration(rt.RemindEvery) < MinRouteInterval {
		p.add(key+".remind_every", "must be at least %v, got %v", MinRouteInterval, rt.RemindEvery)
	}
}

// approverExamples reads one approver of each kind, for the problem of
// an approver that is not "channel:user".
func (c *Config) approverExamples() string {
	var out []string
	for _, name := range c.Messengers() {
		out = append(out, fmt.Sprintf("%q", name+":"+c.Messenger(name).ApproverExample()))
	}
	return strings.Join(append(out, `"web:owner"`, `"agent:ops"`), ", ")
}

// notifyChannels checks a list of channels a card goes to: an agent's or a
// route's notify, a route's escalate_to.
func (c *Config) notifyChannels(p *problems, key string, list []string) {
	seen := map[string]bool{}
	for j, n := range list {
		nk := fmt.Sprintf("%s[%d]", key, j)
		m := c.Messenger(n)
		switch {
		case n != NotifyWeb && m == nil:
			p.add(nk, "unknown channel %q (want %s)", n, orList(append([]string{NotifyWeb}, c.Messengers()...)))
		case seen[n]:
			p.add(nk, "%q is listed twice", n)
		case m != nil && !m.Enabled():
			p.add(nk, "%s", notConfigured(n, m))
		}
		seen[n] = true
	}
}

// checkStepUp checks a route's step_up: with "passkey" only web users can
// allow (on the web page, with their passkey), so a route must let at
// least quorum of them approve.
func (c *Config) checkStepUp(p *problems, key string, rt Route) {
	switch rt.StepUp {
	case "", StepUpNone:
		return
	case StepUpPasskey:
	default:
		p.add(key+".step_up", "unknown value %q (want \"none\" or \"passkey\")", rt.StepUp)
		return
	}
	if len(rt.Approvers) == 0 {
		return // every web user may approve: each channel's own approvers
	}
	web := 0
	for _, ap := range rt.Approvers {
		if ch, user, _ := strings.Cut(ap, ":"); ch == NotifyWeb && c.Web.WebUser(user) {
			web++
		}
	}
	switch {
	case web == 0:
		p.add(key+".step_up", "\"passkey\" needs a web user among the approvers (\"web:<name>\"): only they can sign an allow with a passkey")
	case rt.Quorum > web:
		p.add(key+".step_up", "\"passkey\" with quorum %d needs %d web users among the approvers, only %d listed", rt.Quorum, rt.Quorum, web)
	}
}
