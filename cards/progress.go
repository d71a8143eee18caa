package cards

import (
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// Progress is the quorum line of a pending request that needs more than
// one approver: "1 of 2 approvals: Roberto ✅ (Allow always) · waiting for
// 1 more". It is "" for a quorum of one.
func Progress(r approvals.Request, l locale.Locale) string {
	q := r.Quorum
	if q <= 1 {
		return ""
	}
	n := r.AllowCount()
	if n == 0 {
		return l.T("card.needs_approvals", q)
	}
	var parts []string
	for _, a := range r.Approvals {
		switch a.Decision {
		case approvals.AllowOnce:
			parts = append(parts, l.T("card.approval_once", DisplayName(a.By)))
		case approvals.AllowAlways:
			parts = append(parts, l.T("card.approval_always", DisplayName(a.By)))
		case approvals.AllowFor:
			parts = append(parts, l.T("card.approval_for", DisplayName(a.By), WhileWords(a.For)))
		case approvals.AllowSession:
			parts = append(parts, l.T("card.approval_session", DisplayName(a.By)))
		}
	}
	s := l.T("card.progress", n, q, strings.Join(parts, ", "))
	if n < q {
		s += l.T("card.progress_more", q-n)
	}
	return s
}

// Escalation says why an escalated card arrived: "⏫ Escalated: no answer
// in 5m". It is "" for a request that was not escalated.
func Escalation(r approvals.Request, l locale.Locale) string {
	if r.EscalatedAt == nil {
		return ""
	}
	return l.T("card.escalated", ShortDuration(r.EscalateAfter))
}

// Reminder is the text of a reminder sent next to a pending card.
func Reminder(r approvals.Request, l locale.Locale) string {
	s := l.T("card.reminder", r.Agent, r.Capability)
	if p := Progress(r, l); p != "" {
		s += " (" + p + ")"
	}
	return s + l.T("card.reminder_expires", l.Clock(r.ExpiresAt))
}

// ShortDuration writes d as people say it: "5m", "2s", "1h30m".
func ShortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// approverNames are the people whose allows finished a request of more
// than one approver ("Roberto, anna"); "" otherwise.
func approverNames(r approvals.Request) string {
	if r.AllowCount() < 2 {
		return ""
	}
	var names []string
	for _, a := range r.Approvals {
		if a.Decision != approvals.Deny {
			names = append(names, DisplayName(a.By))
		}
	}
	return strings.Join(names, ", ")
}
