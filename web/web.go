package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// The web page's limits: how much of each list one page shows.
const (
	webMaxPending = 100
	webMaxGrants  = 200
	webMaxRecent  = 20
	// webRefresh is how often the page asks whether anything changed.
	webRefresh = 10 * time.Second
)

//go:embed templates/*.html
var webTemplates embed.FS

// web is the owner's page (SPEC §8 "Web page"): the pending cards with
// their buttons, the active grants with Revoke, the recent decisions.
// Every visit needs a session, loopback included (a one-time login link,
// or the admin token); every form carries the session's CSRF token
// (web_auth.go).
type web struct {
	s    *server
	tmpl *template.Template
	loc  locale.Locale // the page's language, zone (server.timezone) and clock
	// key signs session and flash cookies. It is random per process: a
	// restart logs everyone out, and nothing secret is ever stored.
	key []byte
	// throttle slows wrong login attempts (throttle.go).
	throttle *throttle
}

func newWeb(s *server) *web {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	l := locale.New(locale.Lang(s.cfg.Web.Language), s.cfg.Server.Zone(), s.now)
	funcs := template.FuncMap{
		"t":         l.T, // {{t "web.key" args…}}: every word of the page comes from the catalog
		"lang":      func() string { return string(l.Lang()) },
		"when":      l.Clock, // the time with its zone, and the day when it is not today
		"unixms":    func(t time.Time) int64 { return t.UnixMilli() },
		"score":     func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
		"until":     func(t time.Time) string { return l.In(t.Sub(s.now())) },
		"buttonCSS": buttonClass,
		"cardView":  func(c pendingCard, csrf string, whole bool) cardView { return cardView{C: c, CSRF: csrf, Whole: whole} },
	}
	tmpl := template.Must(template.New("web").Funcs(funcs).ParseFS(webTemplates, "templates/*.html"))
	return &web{s: s, tmpl: tmpl, loc: l, key: key, throttle: newThrottle(s.now)}
}

// webRoutes mounts the web page. Every route but the login's goes through
// access (a session); every POST also through csrf.
func (w *web) routes(mux *http.ServeMux) {
	type hf = http.HandlerFunc
	mux.Handle("GET /{$}", w.access(hf(w.page)))
	mux.Handle("GET /web/state", w.access(hf(w.state)))
	mux.Handle("GET /history", w.access(hf(w.history)))
	// A request's own page: /r/{id} is the short form cards link to.
	mux.Handle("GET /requests/{id}", w.access(hf(w.request)))
	mux.Handle("GET /r/{id}", w.access(hf(w.request)))
	mux.Handle("GET /account", w.access(hf(w.account)))
	mux.Handle("POST /web/decide", w.access(w.csrf(hf(w.decide))))
	mux.Handle("POST /web/revoke", w.access(w.csrf(w.adminOnly(w.policyTap(hf(w.revoke))))))
	mux.Handle("POST /web/rules/add", w.access(w.csrf(w.adminOnly(w.policyTap(hf(w.addRule))))))
	mux.Handle("POST /web/rules/remove", w.access(w.csrf(w.adminOnly(w.policyTap(hf(w.removeRule))))))
	mux.Handle("POST /web/policy/passkey/begin", w.access(w.csrf(w.adminOnly(hf(w.policyBegin)))))
	mux.Handle("POST /web/policy/passkey", w.access(w.csrf(w.adminOnly(hf(w.policySigned)))))
	mux.Handle("POST /web/rules/simulate", w.access(w.csrf(hf(w.simulateRule))))
	mux.Handle("POST /web/passkeys/begin", w.access(w.csrf(hf(w.passkeyBegin))))
	mux.Handle("POST /web/passkeys/add", w.access(w.csrf(hf(w.passkeyAdd))))
	mux.Handle("POST /web/passkeys/remove", w.access(w.csrf(hf(w.passkeyRemove))))
	mux.Handle("POST /web/decide/passkey/begin", w.access(w.csrf(hf(w.stepUpBegin))))
	mux.Handle("POST /web/decide/passkey", w.access(w.csrf(hf(w.stepUpDecide))))
	mux.Handle("POST /login/passkey/begin", w.loginCSRF(hf(w.passkeyLoginBegin)))
	mux.Handle("POST /login/passkey", w.loginCSRF(hf(w.passkeyLogin)))
	mux.HandleFunc("GET /login", w.loginPage)
	mux.HandleFunc("GET /login/{token}", w.loginLink)
	mux.Handle("POST /login", w.loginCSRF(hf(w.login)))
	mux.Handle("POST /logout", w.access(w.csrf(hf(w.logout))))
}

// pendingCard is one request as the page shows it: every agent-supplied
// string went through cards.Display (in cards.New).
type pendingCard struct {
	cards.Card
	Buttons   []cards.Button
	Principal string // whose grants Allow always writes: "web/owner"
	PagePath  string // the request's own page, /r/{id}
	// StepUp: each allow is signed with the user's passkey (the route's
	// step_up); the allow buttons run the assertion.
	StepUp bool
}

// cardView is what the card template reads: the card, the CSRF token of
// its forms, and whether it is the request's own page (Whole).
type cardView struct {
	C     pendingCard
	CSRF  string
	Whole bool
}

// cardOf builds the card of r. Allow always writes its grant at the tap,
// for grant_ttl from then: that is the expiry a pending card shows,
// whatever was computed at submission.
func (w *web) cardOf(ctx context.Context, r approvals.Request) pendingCard {
	switch {
	case r.Status == approvals.StatusPending && r.AllowAlwaysOffered() && w.s.cfg.Policy.GrantTTL > 0:
		t := w.s.now().Add(time.Duration(w.s.cfg.Policy.GrantTTL))
		r.GrantExpiresAt = &t
	case r.GrantID != nil && r.GrantExpiresAt == nil:
		if g, err := w.s.grants.Get(ctx, *r.GrantID); err == nil {
			r.GrantExpiresAt = g.ExpiresAt
		}
	}
	c := cards.New(r, w.loc)
	return pendingCard{Card: c, Buttons: c.Buttons(), Principal: cards.SafeIn(r.Channel+"/"+r.SenderID, w.loc),
		PagePath: cards.RequestPath(r.ID), StepUp: r.StepUp != ""}
}

// suggestionRow is one suggestion as the page shows it: the rule's fields
// as Add this rule posts them, and the same made safe to read.
type suggestionRow struct {
	replay.Suggestion
	ShownTarget, ShownScope string
}

// SuggestWindow and SuggestMin are the page's Suggestions (and the daily
// digest's): the last week, families allowed at least three times.
const (
	SuggestWindow = 7 * 24 * time.Hour
	SuggestMin    = 3
)

// suggestionRows lists the page's suggestions as last computed in the
// background; a failure there shows none (it is logged).
func (w *web) suggestionRows() []suggestionRow {
	list := w.s.suggest.latest() // computed in the background (suggester)
	out := make([]suggestionRow, len(list))
	for i, sg := range list {
		out[i] = suggestionRow{Suggestion: sg, ShownTarget: cards.SafeIn(sg.Target, w.loc),
			ShownScope: cards.SafeIn(sg.Agent+" · "+sg.Channel+"/"+sg.SenderID, w.loc)}
	}
	return out
}

// grantRow is one active grant.
type grantRow struct {
	policy.Grant
	Principal string
	// ExpiresInDays is how many days (rounded up) it has left; 0: no expiry.
	ExpiresInDays int
}

// recentRow is one finished request.
type recentRow struct {
	ID         string
	Title      string
	Target     string
	StatusLine string
	Note       string
	Status     approvals.Status
}

// pageData is everything the page template reads.
type pageData struct {
	CSRF  string
	Flash *flash
	// PasskeyNotices tell of the passkeys added and removed in the last
	// day, of every user.
	PasskeyNotices []string
	User           string // the signed-in web user
	Admin          bool   // the user may change rules and grants (else an approver)
	// PolicyPasskey: each change of rules and grants is signed with the
	// admin's passkey ([web] policy_step_up).
	PolicyPasskey bool
	Pending       []pendingCard
	// MorePending counts pending requests past the first webMaxPending.
	MorePending int
	Grants      []grantRow
	Recent      []recentRow
	// Rules are every rule with its source; run-time ones can be removed.
	Rules            []ruleRow
	RuleCapabilities []string // the add form's choices
	// Suggestions are the approve rules learned from the last week's
	// allows (at least 3), each with Add this rule; read for the page
	// only, not for its fingerprint.
	Suggestions []suggestionRow
	// Batch are the pending requests Several at once offers (web_batch.go).
	Batch   []batchRow
	State   string // fingerprint of the lists; the page reloads when it changes
	Refresh int    // seconds between checks
}

// load reads the three lists and their fingerprint.
func (w *web) load(ctx context.Context) (pageData, error) {
	pending, err := w.s.svc.ListPending(ctx, webMaxPending)
	if err != nil {
		return pageData{}, fmt.Errorf("web page: list pending: %w", err)
	}
	grants, err := w.s.grants.List(ctx, policy.GrantFilter{Limit: webMaxGrants})
	if err != nil {
		return pageData{}, fmt.Errorf("web page: list grants: %w", err)
	}
	recent, err := w.s.svc.ListRecent(ctx, webMaxRecent)
	if err != nil {
		return pageData{}, fmt.Errorf("web page: list recent: %w", err)
	}
	d := pageData{Refresh: int(webRefresh / time.Second)}
	if len(pending) == webMaxPending {
		if n, err := w.s.svc.CountPending(ctx); err == nil {
			d.MorePending = n - len(pending)
		}
	}
	h := sha256.New()
	for _, r := range pending {
		d.Pending = append(d.Pending, w.cardOf(ctx, r))
		fmt.Fprintf(h, "p%s.%d.%d;", r.ID, len(r.Approvals), r.Rev)
	}
	for _, g := range grants {
		g.Capability, g.Target, g.GrantedBy = cards.SafeIn(g.Capability, w.loc), cards.SafeIn(g.Target, w.loc), cards.SafeIn(g.GrantedBy, w.loc)
		g.Agent, g.SessionID = cards.SafeIn(g.Agent, w.loc), cards.SafeIn(g.SessionID, w.loc)
		row := grantRow{Grant: g, Principal: cards.SafeIn(g.Channel+"/"+g.SenderID, w.loc)}
		if g.ExpiresAt != nil {
			row.ExpiresInDays = max(int((g.ExpiresAt.Sub(w.s.now())+24*time.Hour-1)/(24*time.Hour)), 1)
		}
		d.Grants = append(d.Grants, row)
		fmt.Fprintf(h, "g%d;", g.ID)
	}
	for _, r := range recent {
		if r.GrantID != nil && r.GrantExpiresAt == nil {
			if g, err := w.s.grants.Get(ctx, *r.GrantID); err == nil {
				r.GrantExpiresAt = g.ExpiresAt
			}
		}
		d.Recent = append(d.Recent, recentRow{ID: r.ID, Title: cards.SafeIn(w.loc.T("card.title", r.Agent, r.Capability), w.loc),
			Target: cards.SafeIn(r.Target, w.loc), StatusLine: cards.SafeIn(cards.StatusLine(r, w.loc), w.loc), Note: cards.SafeIn(r.Note, w.loc),
			Status: r.Status})
		fmt.Fprintf(h, "r%s%s;", r.ID, r.Status)
	}
	if err := w.loadRules(ctx, &d, h); err != nil {
		return pageData{}, err
	}
	d.State = hex.EncodeToString(h.Sum(nil)[:12])
	return d, nil
}

// page is GET /: the whole page.
func (w *web) page(rw http.ResponseWriter, r *http.Request) {
	d, err := w.load(r.Context())
	if err != nil {
		w.fail(rw, r, err)
		return
	}
	d.CSRF, d.User, d.Admin = sessionOf(r).CSRF, sessionOf(r).User, w.isAdmin(r)
	d.PolicyPasskey = w.s.cfg.Web.PolicyPasskey()
	d.Flash = w.takeFlash(rw, r)
	d.PasskeyNotices = w.passkeyNotices(r.Context())
	d.Suggestions = w.suggestionRows()
	d.Batch = w.batchRows(r.Context(), w.actor(r))
	w.render(rw, r, http.StatusOK, "page.html", &d)
}

// state is GET /web/state: the fingerprint of what the page shows, so the
// page reloads itself only when something changed (a reload under a finger
// about to tap must not move the buttons for nothing).
func (w *web) state(rw http.ResponseWriter, r *http.Request) {
	d, err := w.load(r.Context())
	if err != nil {
		w.fail(rw, r, err)
		return
	}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	_, _ = rw.Write([]byte(d.State))
}

// decide is POST /web/decide: one of the three buttons, on the page or
// on a request's own page (from=request), where it then returns.
func (w *web) decide(rw http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id")
	if r.PostFormValue("from") == "request" && id != "" {
		rw = backTo{rw, cards.RequestPath(url.PathEscape(id))}
	}
	d, err := approvals.ParseDecision(r.PostFormValue("decision"))
	if err != nil || id == "" {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.bad_decision")})
		return
	}
	ch, err := w.choice(r.Context(), id, d, r.PostFormValue("scope_index"), r.PostFormValue("duration"))
	if err != nil {
		w.redirect(rw, r, w.decideFailure(err))
		return
	}
	// The grant is the request's agent's unless the approver ticks "for
	// every agent" (never offered on a guarded route: refused there).
	ch.EveryAgent = r.PostFormValue("every_agent") == "1"
	w.decideAs(rw, r, id, ch, w.actor(r))
}

// decideAs records ch on request id by actor and goes back with what
// happened.
func (w *web) decideAs(rw http.ResponseWriter, r *http.Request, id string, ch approvals.Choice, actor approvals.Actor) {
	d := ch.Decision
	req, err := w.s.svc.DecideChoice(r.Context(), id, ch, actor)
	var already *approvals.AlreadyDecidedError
	if errors.As(err, &already) && already.Request.DecidedBy == actor.String() &&
		already.Request.Decision != nil && *already.Request.Decision == d {
		req, err = already.Request, nil // a double tap: the first one did it
	}
	if err != nil {
		w.redirect(rw, r, w.decideFailure(err))
		return
	}
	target, _ := cards.CutIn(cards.SafeIn(req.Target, w.loc), 200, w.loc)
	if !req.Status.Finished() {
		w.redirect(rw, r, flash{Text: w.loc.T("web.decided", cards.SafeIn(cards.Progress(req, w.loc), w.loc), req.Capability, target)})
		return
	}
	w.redirect(rw, r, flash{Text: w.loc.T("web.decided", cards.SafeIn(cards.StatusLine(req, w.loc), w.loc), req.Capability, target)})
}

// choice reads the scope (an index into the request's scopes, as the
// page's select offers them) and the while of a decision from the form.
func (w *web) choice(ctx context.Context, id string, d approvals.Decision, scopeIndex, while string) (approvals.Choice, error) {
	ch := approvals.Choice{Decision: d}
	if while != "" {
		dur, err := approvals.ParseWhile(while)
		if err != nil {
			return ch, err
		}
		ch.Duration = dur
	}
	if scopeIndex == "" {
		return ch, nil
	}
	req, err := w.s.svc.Get(ctx, id)
	if err != nil {
		return ch, err
	}
	return approvals.ChoiceOfScope(req, ch, scopeIndex)
}

// decideFailure shows cards.Refusal's words for a decision that was not
// recorded.
func (w *web) decideFailure(err error) flash {
	if errors.Is(err, passkeys.ErrNoCeremony) || errors.Is(err, passkeys.ErrRefused) || errors.Is(err, passkeys.ErrNotFound) {
		return flash{Error: true, Text: w.loc.T("web.passkey_refused", cards.SafeIn(cleanMsg(err), w.loc))}
	}
	text, expected := cards.Refusal(err, w.loc)
	if !expected {
		w.s.log.Error("web decide failed", "err", err)
	}
	return flash{Error: true, Text: text}
}

// revoke is POST /web/revoke: the Revoke button of a grant.
func (w *web) revoke(rw http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	if err != nil || id <= 0 {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.bad_grant")})
		return
	}
	w.applyRevoke(rw, r, id, nil)
}

// applyRevoke revokes grant id, its audit row carrying signed (a
// passkey's assertion) when set, and says so.
func (w *web) applyRevoke(rw http.ResponseWriter, r *http.Request, id int64, signed map[string]any) {
	changed, err := w.s.grants.RevokeSigned(r.Context(), id, "revoked", w.webActor(r), signed)
	switch {
	case err != nil:
		w.s.log.Error("web revoke failed", "grant_id", id, "err", err)
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.revoke_failed")})
	case !changed:
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.revoke_inactive", id)})
	default:
		w.s.log.Info("grant revoked", "grant_id", id, "by", w.webActor(r))
		w.redirect(rw, r, flash{Text: w.loc.T("web.revoked", id)})
	}
}

func buttonClass(d approvals.Decision) string {
	switch d {
	case approvals.AllowOnce:
		return "allow"
	case approvals.AllowAlways, approvals.AllowFor, approvals.AllowSession:
		return "always"
	}
	return "deny"
}
