package cards

import (
	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// MaxNotificationTarget bounds, in characters, the target a notification
// shows (head and tail kept, the cut marked): it is a heads-up, and the
// request's page shows the target whole.
const MaxNotificationTarget = 600

// Notification is an "allowed, but tell me" message of [[policy.notify]]:
// who ran what, why it was allowed, when. It has no buttons: nothing is
// left to decide. Every agent string went through Display.
type Notification struct {
	Agent, Capability, Target, Reason, At string
}

// NewNotification builds the neutral fields of r's notification.
func NewNotification(r approvals.Request, l locale.Locale) Notification {
	target, _ := CutIn(SafeIn(r.Target, l), MaxNotificationTarget, l)
	return Notification{Agent: SafeIn(r.Agent, l), Capability: SafeIn(r.Capability, l), Target: target,
		Reason: SafeIn(r.Reason, l), At: l.Clock(r.CreatedAt)}
}

// Render writes the message in m, the target set apart.
func (n Notification) Render(l locale.Locale, m Markup) string {
	return l.T("notify.ran", m.Escape(n.Agent), m.Escape(n.Capability), m.Code(n.Target), m.Escape(n.Reason),
		m.Escape(n.At))
}

// Text is the message as plain text ("🔔 metnos ran code:exec git push
// origin main · approved by rule #1 · 20:04 CET").
func (n Notification) Text(l locale.Locale) string { return n.Render(l, Plain) }
