package approvals

import (
	"bytes"
	"fmt"
	"time"

	"github.com/metnos/gateway/passkeys"
)

// StepUpContent is what an approver's passkey signs to take choice ch on
// r: the request as its card shows it, the decision, and the grant the
// decision writes, resolved as deciding resolves it (so an Allow always
// with no scope signs the default scope it writes). A choice r does not
// offer is refused here as it would be when deciding.
func (s *Service) StepUpContent(r Request, ch Choice) (passkeys.Content, error) {
	scope, ttl, err := s.resolve(&r, ch)
	if err != nil {
		return passkeys.Content{}, err
	}
	return stepUpContent(r, ch.Decision, scope, ttl, ch.EveryAgent), nil
}

// stepUpContent is StepUpContent of a resolved choice: the grant's target
// and lifetime as resolve returned them; every is the choice's EveryAgent.
func stepUpContent(r Request, d Decision, scope string, ttl time.Duration, every bool) passkeys.Content {
	c := passkeys.Content{ID: r.ID, Agent: r.Agent, Capability: r.Capability, Target: r.Target,
		GrantTarget: r.GrantTarget, Autonomy: r.Autonomy.String(), ArgKeys: r.ArgKeys, Channel: r.Channel,
		SenderID: r.SenderID, ExpiresAt: passkeys.ContentTime(r.ExpiresAt), Decision: string(d)}
	if !d.WritesGrant() {
		return c
	}
	c.Scope, c.GrantAgent = scope, grantAgent(r, d, every)
	switch d {
	case AllowFor:
		c.For = FormatWhile(ttl)
	case AllowSession:
		c.SessionID = r.SessionID
	}
	return c
}

// grantAgent is the agent the grant of decision d on r is for: the
// request's agent, unless the approver chose every agent (every: the
// principal's grant, passkeys.AnyAgent), which Allow this session never
// is. decideTx writes the grant this names, and the signed content and
// the audit row say it.
func grantAgent(r Request, d Decision, every bool) string {
	if every && d != AllowSession {
		return passkeys.AnyAgent
	}
	return r.Agent
}

// grantDetail is what an audit row of approval a on r says about the
// grant it writes: the fields the signed content has (scope, for,
// session_id, grant_agent), which `gateway audit verify` holds equal to
// the signed ones. nil when a writes no grant.
func grantDetail(r Request, a Approval) map[string]any {
	if !a.Decision.WritesGrant() {
		return nil
	}
	m := map[string]any{"scope": a.Scope, "grant_agent": grantAgent(r, a.Decision, a.EveryAgent)}
	switch a.Decision {
	case AllowFor:
		m["scope"], m["for"] = r.GrantTarget, a.For
	case AllowSession:
		m["scope"], m["session_id"] = r.GrantTarget, r.SessionID
	}
	return m
}

// checkStepUp refuses an allow of a step-up request that does not carry a
// verified passkey assertion of this web user over exactly want: this
// request, decision and grant (ErrStepUpRequired). Deny never needs one.
func checkStepUp(r Request, d Decision, by Actor, want passkeys.Content) error {
	if d == Deny || r.StepUp == "" {
		return nil
	}
	p := by.Passkey
	switch {
	case !p.Valid():
		return ErrStepUpRequired
	case by.Channel != "web" || p.User() != by.Name:
		return fmt.Errorf("%w: the passkey is not %s's", ErrStepUpRequired, by.Identity())
	case p.RequestID() != r.ID || !bytes.Equal(p.Content(), want.JSON()):
		return fmt.Errorf("%w: the passkey signed another request, decision or grant", ErrStepUpRequired)
	}
	return nil
}
