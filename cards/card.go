// Package cards turns approval requests into what people see: Telegram
// HTML with an inline keyboard, Slack Block Kit, the web page's fields. It
// does no I/O. Neutral fields are built first (Card); each platform has one
// renderer over them.
package cards

import (
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// Card is the platform-neutral content of one request's card.
type Card struct {
	RequestID   string
	Title       string // "local wants fs:write"
	Agent       string
	Level       string
	Capability  string
	Critical    bool
	Target      string
	Intent      string
	Executor    string
	Summary     string
	HasVaglio   bool
	VaglioScore float64
	// Vaglio is the vaglio line in plain words (VaglioWords); VaglioReason
	// is the judge's exact reason, for the web page's request view.
	Vaglio       string
	VaglioReason string
	// AllowAlways says whether the Allow always button is offered; when it
	// is, GrantPreview says exactly what it would grant and until when.
	AllowAlways  bool
	GrantPreview string
	ExpiresAt    time.Time
	Pending      bool
	Status       approvals.Status
	StatusLine   string // the outcome, for finished cards: "✅ Allowed once by Roberto · 14:03 CET"
	Note         string
	// Locale is the language, time zone and clock the card is shown with.
	Locale locale.Locale
	// Progress is the quorum line while more approvers must allow (see
	// Progress); Escalation says why an escalated card arrived.
	Progress   string
	Escalation string
}

// Button is one of the three decisions, in display order.
type Button struct {
	Decision approvals.Decision
	Label    string
}

// The English button labels (SPEC §8); Buttons gives them in the card's
// language, from the catalog ("button.allow_once", …).
const (
	LabelAllowOnce   = "✅ Allow once"
	LabelAllowAlways = "♾ Allow always"
	LabelDeny        = "⛔ Deny"
)

// Buttons returns the buttons of a pending card: Allow always only where
// the capability allows grants.
func (c Card) Buttons() []Button {
	if !c.Pending {
		return nil
	}
	l := c.Locale
	b := []Button{{approvals.AllowOnce, l.T("button.allow_once")}}
	if c.AllowAlways {
		b = append(b, Button{approvals.AllowAlways, l.T("button.allow_always")})
	}
	return append(b, Button{approvals.Deny, l.T("button.deny")})
}

// New builds the neutral card of r, to be shown with l.
func New(r approvals.Request, l locale.Locale) Card {
	c := Card{Locale: l,
		RequestID: r.ID, Title: l.T("card.title", r.Agent, r.Capability), Agent: r.AgentLine(),
		Level: r.Autonomy.String(), Capability: r.Capability, Critical: r.Critical, Target: r.Target,
		Intent: r.Intent, Executor: r.Executor, Summary: r.Summary, ExpiresAt: r.ExpiresAt.In(l.Zone()),
		Pending: r.Status == approvals.StatusPending, Status: r.Status, Note: r.Note,
		AllowAlways: r.AllowAlwaysOffered(),
	}
	if r.Vaglio != nil {
		c.HasVaglio, c.VaglioScore, c.VaglioReason = true, r.Vaglio.Score, r.Vaglio.Reason
		c.Vaglio = VaglioWords(*r.Vaglio, l)
	}
	if c.AllowAlways {
		target := r.GrantTarget
		if target == "*" {
			target = l.T("card.any_target")
		}
		c.GrantPreview = l.T("card.grant_preview", r.Capability, target, r.Channel+"/"+r.SenderID)
		if r.GrantExpiresAt != nil {
			c.GrantPreview += l.T("card.grant_until", l.Date(*r.GrantExpiresAt))
		} else {
			c.GrantPreview += l.T("card.grant_no_expiry")
		}
	}
	c.StatusLine = StatusLine(r, l)
	if c.Pending {
		c.Progress, c.Escalation = Progress(r, l), Escalation(r, l)
	}
	return c
}

// StatusLine is the outcome line of a finished request ("" while pending).
func StatusLine(r approvals.Request, l locale.Locale) string {
	at := ""
	if r.DecidedAt != nil {
		at = " · " + l.Clock(*r.DecidedAt)
	}
	who := DisplayName(r.DecidedBy)
	if names := approverNames(r); names != "" && r.Status == approvals.StatusAllowed {
		who = names
	}
	switch r.Status {
	case approvals.StatusPending:
		return ""
	case approvals.StatusExpired:
		return l.T("status.expired") + at
	case approvals.StatusCancelled:
		return l.T("status.withdrawn") + at
	case approvals.StatusAllowed:
		switch {
		case r.Decision == nil:
			return l.T("status.allowed_by_policy") + at
		case *r.Decision == approvals.AllowAlways:
			s := l.T("status.allowed_always", who)
			if r.GrantID != nil {
				until := ""
				if r.GrantExpiresAt != nil {
					until = l.T("card.grant_until", l.Date(*r.GrantExpiresAt))
				}
				s += l.T("status.grant", *r.GrantID, until)
			}
			return s + at
		default:
			return l.T("status.allowed_once", who) + at
		}
	case approvals.StatusDenied:
		if r.Decision == nil {
			return l.T("status.denied_by_policy", r.Reason) + at
		}
		return l.T("status.denied", who) + at
	}
	return string(r.Status)
}

// DisplayName turns a decided_by value ("telegram:Roberto (42)") into the
// name a person reads ("Roberto").
func DisplayName(decidedBy string) string {
	_, name, ok := strings.Cut(decidedBy, ":")
	if !ok {
		name = decidedBy
	}
	if i := strings.LastIndex(name, " ("); i > 0 && strings.HasSuffix(name, ")") {
		name = name[:i]
	}
	if name == "" {
		return "—"
	}
	return name
}

// Truncate shortens s to at most max bytes (on a rune boundary), ending it
// with the visible marker when it cut anything.
func Truncate(s string, max int) string {
	const marker = "… [truncated]"
	if len(s) <= max {
		return s
	}
	cut := max - len(marker)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
