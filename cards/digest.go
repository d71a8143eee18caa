package cards

import (
	"fmt"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// MaxDigestTarget bounds, in characters, a suggested rule's target in a
// digest (head and tail kept, the cut marked); the web page shows it whole.
const MaxDigestTarget = 200

// Digest is the daily summary of [approvals] digest as a messenger shows
// it. Every agent string went through Display and is cut; the counts and
// the link are the gateway's own.
type Digest struct {
	From, To    string
	Counts      approvals.DigestCounts
	Suggestions []approvals.DigestSuggestion
	Link        string
	// GrantsExpiring and GrantsUnused are the grant review's, each agent
	// string through Display and cut; MoreExpiring and MoreUnused count
	// those not named.
	GrantsExpiring, GrantsUnused []approvals.DigestGrant
	MoreExpiring, MoreUnused     int
}

// NewDigest builds the neutral fields of d's message.
func NewDigest(d approvals.Digest, l locale.Locale) Digest {
	out := Digest{From: l.Clock(d.From), To: l.Clock(d.To), Counts: d.DigestCounts, Link: d.Link,
		MoreExpiring: d.MoreExpiring, MoreUnused: d.MoreUnused}
	safe := func(gs []approvals.DigestGrant) []approvals.DigestGrant {
		var out []approvals.DigestGrant
		for _, g := range gs {
			g.Agent, g.Capability = SafeIn(g.Agent, l), SafeIn(g.Capability, l)
			g.Target, _ = CutIn(SafeIn(g.Target, l), MaxDigestTarget, l)
			out = append(out, g)
		}
		return out
	}
	out.GrantsExpiring, out.GrantsUnused = safe(d.GrantsExpiring), safe(d.GrantsUnused)
	for _, s := range d.Suggestions {
		target, _ := CutIn(SafeIn(s.Target, l), MaxDigestTarget, l)
		out.Suggestions = append(out.Suggestions, approvals.DigestSuggestion{Agent: SafeIn(s.Agent, l),
			Capability: SafeIn(s.Capability, l), Target: target, Count: s.Count})
	}
	return out
}

// Render writes the message in m.
func (d Digest) Render(l locale.Locale, m Markup) string {
	esc, code := m.Escape, m.Code
	var b strings.Builder
	b.WriteString(esc(l.T("digest.title", d.From, d.To)))
	b.WriteByte('\n')
	c := d.Counts
	b.WriteString(esc(l.T("digest.counts", c.Asked, c.Allowed, c.Denied, c.Expired)))
	if c.Pending > 0 || c.Cancelled > 0 {
		b.WriteString(esc(l.T("digest.open", c.Pending, c.Cancelled)))
	}
	b.WriteByte('\n')
	d.renderGrants(&b, l, esc, code)
	if len(d.Suggestions) == 0 {
		b.WriteString(esc(l.T("digest.no_suggestions")))
		return b.String()
	}
	b.WriteString(esc(l.T("digest.suggestions")))
	for _, s := range d.Suggestions {
		b.WriteString("\n• ")
		b.WriteString(esc(s.Agent + " · " + s.Capability + " "))
		b.WriteString(code(s.Target))
		b.WriteString(esc(" · " + l.T("digest.times", s.Count)))
	}
	b.WriteByte('\n')
	// The link goes where the language puts it, rendered on its own.
	before, after, _ := strings.Cut(l.T("digest.review", "\x00"), "\x00")
	b.WriteString(esc(before) + m.Link(d.Link) + esc(after))
	return b.String()
}

// renderGrants names the grant review's grants, one a line: the grants
// that expire soon with when, then those unused for 30 days with when last
// used; the agent a grant is for, when it is one agent's.
func (d Digest) renderGrants(b *strings.Builder, l locale.Locale, esc, code func(string) string) {
	nExp, nUnused := len(d.GrantsExpiring)+d.MoreExpiring, len(d.GrantsUnused)+d.MoreUnused
	if nExp == 0 && nUnused == 0 {
		return
	}
	b.WriteString(esc(l.T("digest.grants", nExp, nUnused)))
	line := func(g approvals.DigestGrant, when string) {
		b.WriteString("\n• ")
		b.WriteString(esc(fmt.Sprintf("#%d %s ", g.ID, g.Capability)))
		b.WriteString(code(g.Target))
		if g.Agent != "" {
			b.WriteString(esc(" · " + l.T("grants.agent_only", "")))
			b.WriteString(code(g.Agent))
		}
		b.WriteString(esc(" · " + when))
	}
	for _, g := range d.GrantsExpiring {
		line(g, l.T("grants.until", l.Date(*g.ExpiresAt)))
	}
	if d.MoreExpiring > 0 {
		b.WriteString("\n" + esc(l.T("digest.grants_more", d.MoreExpiring)))
	}
	for _, g := range d.GrantsUnused {
		when := l.T("grants.never_used")
		if g.LastUsedAt != nil {
			when = l.T("grants.last_used", l.Date(*g.LastUsedAt))
		}
		line(g, when)
	}
	if d.MoreUnused > 0 {
		b.WriteString("\n" + esc(l.T("digest.grants_more", d.MoreUnused)))
	}
	b.WriteByte('\n')
}

// Text is the message as plain text.
func (d Digest) Text(l locale.Locale) string { return d.Render(l, Plain) }
