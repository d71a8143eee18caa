package approvals

import (
	"context"
	"errors"
)

// ErrPolicyStepUp refuses a grant change from a chat while [web]
// policy_step_up = "passkey": an admin makes it on the web page, as a
// passkey assertion over the change (the API's 403 step_up_required).
var ErrPolicyStepUp = errors.New("policy changes need an admin's passkey on the web page ([web] policy_step_up)")

// RevokeGrant revokes grant id for a chat's admin by (each messenger
// checks its own admins first), held to the page's bar: refused
// (ErrPolicyStepUp) while policy changes need a passkey. changed is false
// for a grant already revoked or expired.
func (s *Service) RevokeGrant(ctx context.Context, id int64, by Actor) (changed bool, err error) {
	if s.opts.PolicyStepUp {
		return false, ErrPolicyStepUp
	}
	return s.grants.Revoke(ctx, id, "revoked", by.String())
}
