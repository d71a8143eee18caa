package cards

import (
	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// Web Push limits. A push service takes at most 4,096 bytes of encrypted
// payload (RFC 8291 with one record), and a lock screen shows two or
// three lines: the target is cut well before either.
const (
	MaxPushTarget = 160
	MaxPushTitle  = 120
)

// Push is what a Web Push notification of a request shows: the neutral
// fields the service worker turns into a notification. Every agent string
// went through Display (the cards' escaping and bidi rules) and is cut.
// It carries no argument values, no token and no secret: a push service
// stores it, encrypted, until the device wakes.
type Push struct {
	RequestID  string
	Title      string // "local wants fs:write"
	Agent      string
	Capability string
	Target     string // cut to MaxPushTarget
	Body       string // the target and the expiry, or the outcome once finished
	ExpiresAt  string // RFC 3339
	Status     approvals.Status
	// AllowOnce and Deny are the action titles ("Allow once", "Deny").
	AllowOnce, Deny string
}

// NewPush builds r's push: while pending, the target and when it
// expires; once finished, the outcome ("✅ Allowed once by anna · 14:03").
func NewPush(r approvals.Request, l locale.Locale) Push {
	title, _ := CutIn(SafeIn(l.T("card.title", r.Agent, r.Capability), l), MaxPushTitle, l)
	target, _ := CutIn(SafeIn(r.Target, l), MaxPushTarget, l)
	p := Push{RequestID: r.ID, Title: title, Agent: SafeIn(r.Agent, l), Capability: SafeIn(r.Capability, l),
		Target: target, ExpiresAt: r.ExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00"), Status: r.Status,
		AllowOnce: l.T("push.allow_once"), Deny: l.T("push.deny")}
	if r.Status == approvals.StatusPending {
		p.Body = l.T("push.pending", target, l.Expires(r.ExpiresAt))
	} else {
		p.Body = SafeIn(StatusLine(r, l), l)
	}
	return p
}
