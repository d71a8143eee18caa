// What every request of an agent starts from, whichever way it came: a
// body posted to /v1/requests or /v1/check (submission), or a tool call
// a hook maps (callSubmission).

package gateway

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/policy"
)

// agentSubmission is a submission of agent a before its own fields: the
// agent's profile, pending cap and deliveries, and its child token's id.
func agentSubmission(a *Agent) approvals.Submission {
	sub := approvals.Submission{MaxPending: a.MaxPending, Profile: a.Profile(), Notify: a.Notify}
	if a.Child != nil {
		sub.TokenID, sub.TokenName = a.Child.ID, a.Child.Name
	}
	return sub
}

// principal fills sub's principal, the agent's own when it names none,
// and refuses half of one or one the agent may not act for.
func principal(a *Agent, sub *approvals.Submission) error {
	if sub.Channel == "" && sub.SenderID == "" {
		sub.Channel, sub.SenderID = a.Channel, a.SenderID
	}
	if sub.Channel == "" || sub.SenderID == "" {
		return &policy.FieldError{Field: "sender_id", Err: errors.New("channel and sender_id go together; give both or neither")}
	}
	if !a.MayActFor(sub.Channel, sub.SenderID) {
		return fmt.Errorf("%w: agent %s may not act for %s:%s (its principal is %s:%s; list others in principals)",
			errForeignPrincipal, a.ID, sub.Channel, sub.SenderID, a.Channel, a.SenderID)
	}
	return nil
}

// checkSessionID refuses a session id too long for a call id, or one
// holding a control character.
func checkSessionID(id string) error {
	if len(id) > approvals.MaxCallIDBytes || strings.ContainsFunc(id, unicode.IsControl) {
		return &policy.FieldError{Field: "session_id",
			Err: fmt.Errorf("over %d bytes or holds a control character", approvals.MaxCallIDBytes)}
	}
	return nil
}

// callSubmission is the request a hook's tool call becomes: the call's
// fields over agent a's defaults, waiting up to wait. The call's home
// (the hook's own environment, from `gateway hook`) replaces [[agents]]
// home.
func callSubmission(a *Agent, c hooks.Call, wait time.Duration) (approvals.Submission, error) {
	sub := agentSubmission(a)
	sub.CallID, sub.Capability, sub.Target, sub.SessionID = c.CallID, c.Capability, c.Target, c.SessionID
	sub.Intent, sub.Executor, sub.Summary, sub.Args, sub.Ask = c.Intent, c.Executor, c.Summary, c.Args, c.Ask
	sub.Timeout = wait
	if c.Home != "" {
		sub.Profile.Home = c.Home
	}
	if err := principal(a, &sub); err != nil {
		return sub, err
	}
	return sub, checkSessionID(c.SessionID)
}
