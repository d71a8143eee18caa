package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/sessions"
)

// The web page's passkeys (passkeys package): added and removed on the
// Account page, used to sign in, and to sign each allow of a request whose
// route has step_up = "passkey". Each ceremony is two calls: a begin that
// answers the options for navigator.credentials (JSON, from a fetch), and
// a form POST with the browser's answer.

// rp is the relying party of the page as the browser asked for it.
func (w *web) rp(r *http.Request) (passkeys.RP, error) {
	return passkeys.RPOf(w.s.cfg.Web.PublicURL, r.Host)
}

// beginJSON answers a ceremony's options, or why none was started.
func (w *web) beginJSON(rw http.ResponseWriter, b passkeys.Begun, err error) {
	rw.Header().Set("Cache-Control", "no-store")
	if err != nil {
		status, msg := http.StatusBadRequest, cleanMsg(err)
		if errors.Is(err, approvals.ErrNotApprover) {
			text, _ := cards.Refusal(err, w.loc)
			status, msg = http.StatusForbidden, text
		} else if !errors.Is(err, passkeys.ErrNotFound) && !errors.Is(err, approvals.ErrNotFound) &&
			!errors.Is(err, approvals.ErrInvalid) && !errors.Is(err, approvals.ErrNotOffered) &&
			!errors.Is(err, approvals.ErrAllowAlwaysRefused) && !errors.Is(err, errNotStepUp) {
			w.s.log.Error("passkey ceremony", "err", err)
			status, msg = http.StatusInternalServerError, w.loc.T("web.failed")
		}
		writeJSON(rw, status, map[string]string{"error": msg})
		return
	}
	writeJSON(rw, http.StatusOK, b)
}

// PasskeyProofFresh is how recently a session must have been started with
// a login link or a passkey for its user to add a passkey: whoever holds
// an older session (a stolen cookie, a browser left open) cannot leave a
// passkey of their own behind.
const PasskeyProofFresh = 5 * time.Minute

// errStaleProof refuses adding a passkey from a session not started
// within PasskeyProofFresh by a login link or a passkey.
var errStaleProof = errors.New("adding a passkey needs a fresh proof")

// proofOf says how the session s proved its user within fresh of now
// ("login link", "passkey"), or errStaleProof.
func (w *web) proofOf(s sessions.Session, fresh time.Duration) (string, error) {
	if w.s.now().Sub(s.StartedAt) > fresh {
		return "", errStaleProof
	}
	switch s.Via {
	case "link":
		return "login link", nil
	case "passkey":
		return "passkey", nil
	}
	return "", errStaleProof
}

// passkeyBegin is POST /web/passkeys/begin: the options to add a passkey
// for the signed-in user, whose session must be fresh (proofOf).
func (w *web) passkeyBegin(rw http.ResponseWriter, r *http.Request) {
	rp, err := w.rp(r)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	if _, err := w.proofOf(sessionOf(r), PasskeyProofFresh); err != nil {
		w.s.log.Warn("passkey add refused: stale session", "user", sessionOf(r).User)
		rw.Header().Set("Cache-Control", "no-store")
		writeJSON(rw, http.StatusForbidden, map[string]string{"error": w.loc.T("web.passkey_stale", sessionOf(r).User)})
		return
	}
	b, err := w.s.passkeys.BeginRegistration(r.Context(), rp, sessionOf(r).User)
	w.beginJSON(rw, b, err)
}

// passkeyAdd is POST /web/passkeys/add: the authenticator's answer, which
// stores the passkey under the name given (else "passkey added <date>").
func (w *web) passkeyAdd(rw http.ResponseWriter, r *http.Request) {
	rw = backTo{rw, "/account"}
	rp, err := w.rp(r)
	if err != nil {
		w.redirect(rw, r, flash{Error: true, Text: err.Error()})
		return
	}
	user := sessionOf(r).User
	// The ceremony was begun from a fresh session; it may take its own
	// few minutes to answer.
	proof, err := w.proofOf(sessionOf(r), PasskeyProofFresh+passkeys.CeremonyTTL)
	if err != nil {
		w.s.log.Warn("passkey add refused: stale session", "user", user)
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.passkey_stale", user)})
		return
	}
	def := w.loc.T("web.passkey_default_name", w.s.now().In(w.s.cfg.Server.Zone()).Format(time.DateOnly))
	p, err := w.s.passkeys.FinishRegistration(r.Context(), rp, user, r.PostFormValue("ceremony"),
		r.PostFormValue("name"), def, proof, []byte(r.PostFormValue("credential")))
	if err != nil {
		w.s.log.Warn("passkey not added", "user", user, "err", err)
		w.redirect(rw, r, w.decideFailure(err))
		return
	}
	w.s.log.Info("passkey added", "user", user, "passkey", p.Name, "credential_id", p.CredentialID)
	w.redirect(rw, r, flash{Text: w.loc.T("web.passkey_added", p.Name)})
}

// passkeyRemove is POST /web/passkeys/remove: the passkey signs nothing
// more; its public key stays for the audit check.
func (w *web) passkeyRemove(rw http.ResponseWriter, r *http.Request) {
	rw = backTo{rw, "/account"}
	user := sessionOf(r).User
	id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
	if err != nil {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.passkey_unknown")})
		return
	}
	p, err := w.s.passkeys.Remove(r.Context(), user, id, w.actor(r).String())
	switch {
	case errors.Is(err, passkeys.ErrNotFound):
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.passkey_unknown")})
	case err != nil:
		w.s.log.Error("passkey remove failed", "user", user, "err", err)
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.failed")})
	default:
		w.s.log.Info("passkey removed", "user", user, "passkey", p.Name, "credential_id", p.CredentialID)
		w.redirect(rw, r, flash{Text: w.loc.T("web.passkey_removed", p.Name)})
	}
}

// passkeyLoginBegin is POST /login/passkey/begin: the options of a
// sign-in with a discoverable passkey.
func (w *web) passkeyLoginBegin(rw http.ResponseWriter, r *http.Request) {
	rp, err := w.rp(r)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	// A source refused before waits (the login throttle) before the
	// database is asked again.
	src := sourceOf(r)
	wait := w.throttle.waiting(src)
	var b passkeys.Begun
	if wait == 0 {
		b, err = w.s.passkeys.BeginLogin(r.Context(), rp, src)
		if errors.Is(err, passkeys.ErrTooManyLogins) {
			wait = w.throttle.fail(src, "")
		}
	}
	if wait > 0 || errors.Is(err, passkeys.ErrTooManyLogins) {
		w.s.log.Debug("passkey sign-in refused: too many begun", "remote", r.RemoteAddr)
		rw.Header().Set("Cache-Control", "no-store")
		retry := passkeys.CeremonyTTL
		if wait > 0 {
			retry = wait
		}
		rw.Header().Set("Retry-After", strconv.Itoa(retrySeconds(retry)))
		writeJSON(rw, http.StatusTooManyRequests, map[string]string{"error": w.loc.T("web.passkey_login_busy")})
		return
	}
	w.beginJSON(rw, b, err)
}

// passkeyLogin is POST /login/passkey: a verified assertion of a
// configured web user's passkey starts their session.
func (w *web) passkeyLogin(rw http.ResponseWriter, r *http.Request) {
	next, src := safeNext(r.PostFormValue("next")), sourceOf(r)
	rp, err := w.rp(r)
	var user string
	if err == nil {
		user, err = w.s.passkeys.FinishLogin(r.Context(), rp, r.PostFormValue("ceremony"),
			[]byte(r.PostFormValue("credential")), func(name string) bool { return WebUserExists(w.s.cfg, name) })
	}
	if err != nil {
		if !errors.Is(err, passkeys.ErrRefused) && !errors.Is(err, passkeys.ErrNoCeremony) {
			w.fail(rw, r, err)
			return
		}
		wait := w.throttle.fail(src, "")
		w.s.log.Warn("web passkey sign-in refused", "remote", r.RemoteAddr, "err", err)
		if wait > 0 {
			rw.Header().Set("Retry-After", strconv.Itoa(retrySeconds(wait)))
		}
		w.render(rw, r, http.StatusUnauthorized, "login.html", loginData{CSRF: w.loginToken(rw, r), Next: next,
			Token: w.s.cfg.Web.AdminToken != "", Error: w.loc.T("web.passkey_login_refused")})
		return
	}
	w.logIn(rw, r, src, user, "passkey", next)
}

// errNotStepUp refuses a passkey ceremony for a request that does not ask
// for one (or is no longer pending).
var errNotStepUp = errors.New("this request does not ask for a passkey (or is decided)")

// stepChoice is a decision's choice as a step-up ceremony stores it.
type stepChoice struct {
	Decision approvals.Decision `json:"d"`
	Scope    string             `json:"s,omitempty"`
	Duration time.Duration      `json:"f,omitempty"`
}

// stepUpBegin is POST /web/decide/passkey/begin: one of a step-up card's
// allow buttons. The challenge commits to the request, the decision and
// the grant it writes (Service.StepUpContent) and a nonce spent once; only the signed-in
// user's passkeys can answer it.
func (w *web) stepUpBegin(rw http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id")
	d, err := approvals.ParseDecision(r.PostFormValue("decision"))
	if err != nil || id == "" {
		w.beginJSON(rw, passkeys.Begun{}, approvals.ErrInvalid)
		return
	}
	ch, err := w.choice(r.Context(), id, d, r.PostFormValue("scope_index"), r.PostFormValue("duration"))
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	req, err := w.s.svc.Get(r.Context(), id)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	if req.Status != approvals.StatusPending || req.StepUp == "" || d == approvals.Deny {
		w.beginJSON(rw, passkeys.Begun{}, errNotStepUp)
		return
	}
	if err := w.s.svc.MayDecide(r.Context(), req, w.actor(r)); err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	rp, err := w.rp(r)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	content, err := w.s.svc.StepUpContent(req, ch)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	choice, _ := json.Marshal(stepChoice{Decision: ch.Decision, Scope: ch.Scope, Duration: ch.Duration})
	b, err := w.s.passkeys.BeginStepUp(r.Context(), rp, sessionOf(r).User, req.ID, string(choice), content.JSON())
	w.beginJSON(rw, b, err)
}

// stepUpDecide is POST /web/decide/passkey: the assertion answering a
// step-up challenge. The decision is the one the challenge was made for
// (stored with it, never read from this form), taken only when the
// assertion verifies against one of the signed-in user's passkeys.
func (w *web) stepUpDecide(rw http.ResponseWriter, r *http.Request) {
	if id := r.PostFormValue("id"); r.PostFormValue("from") == "request" && id != "" {
		rw = backTo{rw, cards.RequestPath(url.PathEscape(id))}
	}
	rp, err := w.rp(r)
	if err != nil {
		w.redirect(rw, r, flash{Error: true, Text: err.Error()})
		return
	}
	user := sessionOf(r).User
	proof, id, choice, err := w.s.passkeys.FinishStepUp(r.Context(), rp, user, r.PostFormValue("ceremony"),
		[]byte(r.PostFormValue("credential")))
	if err != nil {
		w.s.log.Warn("passkey step-up refused", "user", user, "err", err)
		w.redirect(rw, r, w.decideFailure(err))
		return
	}
	var sc stepChoice
	if err := json.Unmarshal([]byte(choice), &sc); err != nil {
		w.fail(rw, r, err)
		return
	}
	actor := w.actor(r)
	actor.Passkey = proof
	w.decideAs(rw, r, id, approvals.Choice{Decision: sc.Decision, Scope: sc.Scope, Duration: sc.Duration}, actor)
}

// passkeyNotices are the page's lines about passkeys added and removed in
// the last day: a passkey someone else added for a user is seen.
func (w *web) passkeyNotices(ctx context.Context) []string {
	since := w.s.now().Add(-24 * time.Hour)
	keys, err := w.s.passkeys.ChangedSince(ctx, since)
	if err != nil {
		w.s.log.Error("web page: passkey notices", "err", err)
		return nil
	}
	var out []string
	for _, p := range keys {
		name, user := cards.SafeIn(p.Name, w.loc), cards.SafeIn(p.User, w.loc)
		if !p.CreatedAt.Before(since) {
			out = append(out, w.loc.T("web.passkey_notice_added", name, user, w.loc.Clock(p.CreatedAt)))
		}
		if p.RemovedAt != nil && !p.RemovedAt.Before(since) {
			out = append(out, w.loc.T("web.passkey_notice_removed", name, user, w.loc.Clock(*p.RemovedAt)))
		}
	}
	return out
}

// passkeyLine fills a passkey-signed trail row's sentence: the passkey,
// its user, and the signature checked again now against the stored key.
func (w *web) passkeyLine(ctx context.Context, row *historyRow) {
	if !passkeys.Signed(row.Detail) {
		return
	}
	name, _ := row.Detail[passkeys.KeyName].(string)
	user, _ := row.Detail[passkeys.KeyUser].(string)
	note, err := w.s.passkeys.VerifyRow(ctx, row.AuditEvent)
	if err != nil {
		row.Passkey, row.PasskeyBad = cards.SafeIn(w.loc.T("web.h_passkey_bad", name, user, err.Error()), w.loc), true
		return
	}
	row.Passkey = cards.SafeIn(w.loc.T("web.h_passkey_ok", name, user), w.loc)
	if note != "" {
		row.Passkey += " (" + cards.SafeIn(note, w.loc) + ")"
	}
}
