package approvals

import (
	"bytes"
	"fmt"

	"github.com/metnos/gateway/passkeys"
)

// StepUpContent is what an approver's passkey signs to take decision d on
// r: the request as its card shows it, and the decision.
func StepUpContent(r Request, d Decision) passkeys.Content {
	return passkeys.Content{ID: r.ID, Agent: r.Agent, Capability: r.Capability, Target: r.Target,
		GrantTarget: r.GrantTarget, Autonomy: r.Autonomy.String(), ArgKeys: r.ArgKeys, Channel: r.Channel,
		SenderID: r.SenderID, ExpiresAt: passkeys.ContentTime(r.ExpiresAt), Decision: string(d)}
}

// checkStepUp refuses an allow of a step-up request that does not carry a
// verified passkey assertion of this web user over exactly this request
// and decision (ErrStepUpRequired). Deny never needs one.
func checkStepUp(r Request, d Decision, by Actor) error {
	if d == Deny || r.StepUp == "" {
		return nil
	}
	p := by.Passkey
	switch {
	case !p.Valid():
		return ErrStepUpRequired
	case by.Channel != "web" || p.User() != by.Name:
		return fmt.Errorf("%w: the passkey is not %s's", ErrStepUpRequired, by.Identity())
	case p.RequestID() != r.ID || !bytes.Equal(p.Content(), StepUpContent(r, d).JSON()):
		return fmt.Errorf("%w: the passkey signed another request or decision", ErrStepUpRequired)
	}
	return nil
}
