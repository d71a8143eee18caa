// Package cards turns approval requests into what people see, as neutral
// fields (Card) that each surface renders in its own markup: the web
// page's fields, and each messenger's markup in its own package (through
// Markup). It does no I/O.
package cards

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
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
	// Scopes are what Allow always may grant, narrowest first, as shown
	// (through Display); the tap names one by its index. ScopeChoice is
	// the one a card shows chosen (a select on the page or in a chat): by
	// default the request's GrantTarget, what the API grants when no scope
	// is named. GrantPreview names it.
	Scopes      []string
	ScopeChoice int
	// ScopeEvery: the chosen scope is for every agent of the principal
	// (WithEveryScope), never the default nor on a guarded route.
	ScopeEvery bool
	// AllowFor are the whiles of the Allow for buttons ("1h").
	AllowFor []string
	// AllowSession says whether Allow this session is offered (the
	// request names its session; see approvals.AllowSession).
	AllowSession bool
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
	ArgKeys    []string
	// Host and HostASCII are set for a host target whose host reads other
	// than it is written: the host as written (the whole target when a
	// scheme without // hides it, "http:evil.com") and the host the
	// gateway decided on (раураl.com → xn--l-7sba6dbr.com, 0x7f.1 →
	// 127.0.0.1, http:evil.com → evil.com), so a look-alike shows.
	Host, HostASCII string
	// Notice says what Display changed in the card's text: the card then
	// carries a warning line for each.
	Notice Notice
	// PageURL is where the whole request is shown: the web page's
	// /r/{id}, absolute when web.public_url is set (see WithPage).
	PageURL string
	// StepUp says every allow needs the approver's passkey on the web
	// page (the route's step_up): a chat card offers a link to ConfirmURL
	// instead of its allow buttons, and keeps Deny.
	StepUp bool
	// Guarded: the request's route has a quorum or a step-up, so no grant
	// for every agent is offered on it.
	Guarded    bool
	ConfirmURL string
	// ConfirmAsText: the messenger refused ConfirmURL as a button; the
	// card shows it as text.
	ConfirmAsText bool

	// principal and grantUntil are what WithScope's preview names
	// besides the scope: who the grant is for, and until when.
	principal  string
	grantUntil *time.Time
}

// RequestPath is the web page of one request, where every field is shown
// whole.
func RequestPath(id string) string { return "/r/" + id }

// WithPage sets the card's link to its request's web page under the
// gateway's public URL (web.public_url); with none, the link is the bare
// path, which a person opens on the gateway's own address.
func (c Card) WithPage(publicURL string) Card {
	c.PageURL = strings.TrimRight(publicURL, "/") + RequestPath(c.RequestID)
	return c
}

// WithConfirm sets where a step-up card sends its approver to allow: the
// request's page under the gateway's link base.
func (c Card) WithConfirm(linkBase string) Card {
	c.ConfirmURL = strings.TrimRight(linkBase, "/") + RequestPath(c.RequestID)
	return c
}

// ConfirmButton reports whether a step-up card carries its link as a
// button (else as text).
func (c Card) ConfirmButton() bool { return !c.ConfirmAsText && ButtonURL(c.ConfirmURL) }

// ButtonURL reports whether a messenger takes u as a link button: an
// absolute http(s) URL whose host is a name other than localhost (the
// Bot API refuses localhost and bare addresses). Otherwise the card shows
// the link as text.
func ButtonURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.User != nil {
		return false
	}
	h := strings.ToLower(p.Hostname())
	return h != "" && h != "localhost" && !strings.HasSuffix(h, ".localhost") && net.ParseIP(h) == nil && strings.Contains(h, ".")
}

// Linked reports whether PageURL is absolute (a public URL is configured).
func (c Card) Linked() bool {
	return strings.HasPrefix(c.PageURL, "https://") || strings.HasPrefix(c.PageURL, "http://")
}

// Warnings are the card's warning lines, in its language.
func (c Card) Warnings() []string { return c.Notice.Warnings(c.Locale) }

// Button is one decision of a card, in display order. While is set for
// an Allow for button ("1h").
type Button struct {
	Decision approvals.Decision
	Label    string
	While    string
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
	b := []Button{{approvals.AllowOnce, l.T("button.allow_once"), ""}}
	for _, w := range c.AllowFor {
		b = append(b, Button{approvals.AllowFor, l.T("button.allow_for", WhileWords(w)), w})
	}
	if c.AllowSession {
		b = append(b, Button{approvals.AllowSession, l.T("button.allow_session"), ""})
	}
	if c.AllowAlways {
		b = append(b, Button{approvals.AllowAlways, l.T("button.allow_always"), ""})
	}
	return append(b, Button{approvals.Deny, l.T("button.deny"), ""})
}

// New builds the neutral card of r, to be shown with l. Every string an
// agent (or a chat member: a name, a note) chose goes through Display; the
// notices add up to the card's warning lines.
func New(r approvals.Request, l locale.Locale) (c Card) {
	show := func(s string) string {
		out, n := DisplayIn(s, l)
		c.Notice |= n
		return out
	}
	c = Card{Locale: l,
		RequestID: r.ID, Level: r.Autonomy.String(), Capability: show(r.Capability), Critical: r.Critical,
		ExpiresAt: r.ExpiresAt.In(l.Zone()), Pending: r.Status == approvals.StatusPending, Status: r.Status,
		AllowAlways: r.AllowAlwaysOffered(), AllowSession: r.AllowSessionOffered(), PageURL: RequestPath(r.ID),
		StepUp: r.StepUp != "", Guarded: r.Guarded(), ConfirmURL: RequestPath(r.ID),
	}
	c.Agent = show(r.AgentLine())
	c.Title = l.T("card.title", show(r.Agent), c.Capability)
	c.Target, c.Intent, c.Executor, c.Summary, c.Note = show(r.Target), show(r.Intent), show(r.Executor), show(r.Summary), show(r.Note)
	for _, k := range r.ArgKeys {
		c.ArgKeys = append(c.ArgKeys, show(k))
	}
	if host, ascii, ok := idnHost(r.Capability, r.Target); ok {
		c.Host, c.HostASCII = show(host), ascii
	}
	if r.Vaglio != nil {
		c.HasVaglio, c.VaglioScore, c.VaglioReason = true, r.Vaglio.Score, show(r.Vaglio.Reason)
		c.Vaglio = show(VaglioWords(*r.Vaglio, l))
	}
	if c.AllowAlways {
		// The grant is the request's agent's (unless every agent is chosen).
		c.principal, c.grantUntil = show(r.Channel+"/"+r.SenderID+l.T("card.grant_agent", r.Agent)), r.GrantExpiresAt
		for _, sc := range r.Scopes {
			c.Scopes = append(c.Scopes, show(sc))
		}
		if len(c.Scopes) == 0 { // a request from before scopes: its grant target only
			c.Scopes = []string{show(r.GrantTarget)}
		}
		c.AllowFor = r.AllowFor
		c = c.WithScope(max(0, slices.Index(r.Scopes, r.GrantTarget)))
	}
	c.StatusLine = show(StatusLine(r, l))
	if c.Pending {
		c.Progress, c.Escalation = show(Progress(r, l)), show(Escalation(r, l))
	}
	return c
}

// WithScope is the card with scope i chosen: GrantPreview names it. An
// index out of range leaves the card as it is.
func (c Card) WithScope(i int) Card {
	if i < 0 || i >= len(c.Scopes) {
		return c
	}
	l := c.Locale
	c.ScopeChoice = i
	target := c.Scopes[i]
	if target == "*" {
		target = l.T("card.any_target")
	}
	c.GrantPreview = l.T("card.grant_preview", c.Capability, target, c.principal)
	if c.grantUntil != nil {
		c.GrantPreview += l.T("card.grant_until", l.Date(*c.grantUntil))
	} else {
		c.GrantPreview += l.T("card.grant_no_expiry")
	}
	return c
}

// WithEveryScope is the card with scope i chosen for every agent of the
// principal: GrantPreview says so. A guarded card, or an index out of
// range, is left as it is.
func (c Card) WithEveryScope(i int) Card {
	if c.Guarded || i < 0 || i >= len(c.Scopes) {
		return c
	}
	c = c.WithScope(i)
	c.ScopeEvery = true
	c.GrantPreview += " · " + c.Locale.T("web.every_agent")
	return c
}

// WhileWords is a while as a button says it: "1h" → "1 h", "1h30m" →
// "1 h 30 min", "2s" → "2 s".
func WhileWords(w string) string {
	d, err := approvals.ParseWhile(w)
	if err != nil {
		return w
	}
	var parts []string
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "min"}, {time.Second, "s"}} {
		if n := d / u.d; n > 0 {
			parts = append(parts, strconv.FormatInt(int64(n), 10)+" "+u.name)
			d -= n * u.d
		}
	}
	if len(parts) == 0 {
		return w
	}
	return strings.Join(parts, " ")
}

// idnHost returns, for a host target whose host is written otherwise than
// its canonical form (an IDN, "0x7f.1", "[::ffff:127.0.0.1]"), the host as
// written and the canonical host rules and grants see.
func idnHost(capability, target string) (host, canonical string, ok bool) {
	c, err := policy.Lookup(capability)
	if err != nil || c.TargetKind != policy.KindHost {
		return "", "", false
	}
	host, canonical = policy.HostOf(target)
	if host != "" && bareScheme(target) {
		return strings.TrimSpace(target), canonical, true
	}
	return host, canonical, host != "" && strings.TrimSuffix(host, ".") != canonical
}

// bareScheme reports a target that starts with a scheme not followed by
// "//" ("http:evil.com"): a URL parser reads a host there that the eye
// may not. A port after a host ("localhost:8080") is no scheme.
func bareScheme(target string) bool {
	t := strings.TrimSpace(target)
	i := strings.IndexByte(t, ':')
	if i <= 0 || strings.ContainsAny(t[:i], "/.@[") || strings.HasPrefix(t[i:], "://") {
		return false
	}
	return i+1 < len(t) && (t[i+1] < '0' || t[i+1] > '9')
}

// Cuts records what a renderer cut to fit a platform limit, by field, so
// the card can say it (the whole text is on the request's web page).
type Cuts struct {
	l     locale.Locale // the language of the cut markers
	order []string
	n     map[string]int
}

// NewCuts records cuts whose markers are in l.
func NewCuts(l locale.Locale) Cuts { return Cuts{l: l} }

// Locale is the language of the cut markers.
func (c *Cuts) Locale() locale.Locale { return c.l }

// Cut is CutIn, recorded under field.
func (c *Cuts) Cut(field, s string, max int) string {
	out, n := CutIn(s, max, c.l)
	c.Add(field, n)
	return out
}

// Add records n characters cut from field.
func (c *Cuts) Add(field string, n int) {
	if n == 0 {
		return
	}
	if c.n == nil {
		c.n = map[string]int{}
	}
	if _, ok := c.n[field]; !ok {
		c.order = append(c.order, field)
	}
	c.n[field] += n
}

// Any reports whether anything was cut.
func (c *Cuts) Any() bool { return len(c.order) > 0 }

// Line is the card's line about the cuts: "✂ Cut to fit: Target 8,976
// characters. The whole request: " (the link follows).
func (c *Cuts) Line(l locale.Locale) string {
	parts := make([]string, len(c.order))
	for i, f := range c.order {
		parts[i] = l.T("card.cut_field", f, thousands(c.n[f], l))
	}
	return l.T("card.cut", strings.Join(parts, ", "))
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
			return l.T("status.allowed_always", who) + grantLine(r, l) + at
		case *r.Decision == approvals.AllowSession:
			return l.T("status.allowed_session", who) + grantLine(r, l) + at
		case *r.Decision == approvals.AllowFor:
			return l.T("status.allowed_for", WhileWords(AllowedFor(r)), who) + grantLine(r, l) + at
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

// grantLine names the grant a decision wrote: " (grant #7 until 3 Dec)".
func grantLine(r approvals.Request, l locale.Locale) string {
	if r.GrantID == nil {
		return ""
	}
	until := ""
	if r.GrantExpiresAt != nil {
		until = l.T("card.grant_until", l.Date(*r.GrantExpiresAt))
	}
	return l.T("status.grant", *r.GrantID, until)
}

// AllowedFor is the while an Allow for decision chose: the shortest any
// counted approval chose (what a quorum agrees on; see approvals).
func AllowedFor(r approvals.Request) string {
	out, shortest := "?", time.Duration(0)
	for _, a := range r.Approvals {
		if d, err := approvals.ParseWhile(a.For); a.Decision == approvals.AllowFor && err == nil &&
			(shortest == 0 || d < shortest) {
			out, shortest = a.For, d
		}
	}
	return out
}

// DisplayName turns a decided_by value ("chat:Roberto (42)") into the
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
