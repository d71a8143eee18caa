package cards

import (
	"errors"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// Refusal is what a person reads when the decision they sent (a tap, a
// click, a form) was not recorded: the one mapping of the service's
// refusals to words (the refusal.* keys), in l's language. It is plain
// text, safe to show (whatever it quotes passed SafeIn); each messenger
// only renders it: escaped for its markup, as an alert or a flash.
//
// expected is false when err is no refusal but a failure (the database, a
// bug): the words then say that nothing changed and to try again, and the
// caller logs err.
func Refusal(err error, l locale.Locale) (text string, expected bool) {
	var already *approvals.AlreadyDecidedError
	var counted *approvals.AlreadyCountedError
	switch {
	case errors.As(err, &counted):
		return l.T("refusal.already_counted", SafeIn(Progress(counted.Request, l), l)), true
	case errors.As(err, &already):
		return AlreadyDecided(already.Request, l), true
	case errors.Is(err, approvals.ErrOutsider):
		return l.T("refusal.not_approver"), true
	case errors.Is(err, approvals.ErrNotApprover):
		return l.T("refusal.not_route_approver"), true
	case errors.Is(err, approvals.ErrAllowAlwaysRefused), errors.Is(err, policy.ErrGrantNotAllowed):
		return l.T("refusal.allow_always_refused"), true
	case errors.Is(err, approvals.ErrNotOffered):
		return l.T("refusal.not_offered"), true
	case errors.Is(err, approvals.ErrNotFound):
		return l.T("refusal.request_gone"), true
	case errors.Is(err, approvals.ErrStepUpRequired):
		return l.T("refusal.step_up_required"), true
	case errors.Is(err, approvals.ErrPolicyStepUp):
		return l.T("refusal.policy_step_up"), true
	case errors.Is(err, approvals.ErrInvalid):
		return l.T("refusal.invalid", SafeIn(invalidDetail(err), l)), true
	}
	return l.T("refusal.failed"), false
}

// invalidDetail is what an ErrInvalid says after "invalid: ": the field
// and what is wrong with it.
func invalidDetail(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, approvals.ErrInvalid.Error()+": "); i >= 0 {
		return msg[i+len(approvals.ErrInvalid.Error())+2:]
	}
	return msg
}

// AlreadyDecided tells the one who came second what happened first:
// "Already decided: allowed once by Roberto at 14:03".
func AlreadyDecided(r approvals.Request, l locale.Locale) string {
	at := ""
	if r.DecidedAt != nil {
		at = l.T("refusal.at", l.Clock(*r.DecidedAt))
	}
	who := SafeIn(DisplayName(r.DecidedBy), l)
	switch r.Status {
	case approvals.StatusExpired:
		return l.T("refusal.already_expired") + at
	case approvals.StatusCancelled:
		return l.T("refusal.already_withdrawn") + at
	case approvals.StatusAllowed:
		switch {
		case r.Decision != nil && *r.Decision == approvals.AllowAlways:
			return l.T("refusal.already_allowed_always", who) + at
		case r.Decision != nil && *r.Decision == approvals.AllowSession:
			return l.T("refusal.already_allowed_session", who) + at
		case r.Decision != nil && *r.Decision == approvals.AllowFor:
			return l.T("refusal.already_allowed_for", WhileWords(AllowedFor(r)), who) + at
		case r.Decision != nil:
			return l.T("refusal.already_allowed_once", who) + at
		}
		return l.T("refusal.already_allowed", who) + at
	}
	return l.T("refusal.already_denied", who) + at
}
