package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/internal/httpjson"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/sessions"
)

// Cookies of the web page. All are HttpOnly and SameSite=Strict: no script
// reads them and no other site's page sends them. They are Secure when the
// page is served over https (web.public_url https, or TLS here).
const (
	sessionCookie = "gw_session"
	// loginCSRFCookie is the login form's double-submit token: before a
	// session exists there is nothing to bind a token to.
	loginCSRFCookie = "gw_login"
	flashCookie     = "gw_flash"
)

// LoginPath is the path of a one-time login link's token.
func LoginPath(token string) string { return "/login/" + token }

// DefaultWebUser is the user a login is for when none is named: "owner"
// when configured, else the first [[web.users]].
func DefaultWebUser(cfg config.Config) string {
	if cfg.Web.WebUser(config.DefaultWebUser) || len(cfg.Web.Users) == 0 {
		return config.DefaultWebUser
	}
	return cfg.Web.Users[0].Name
}

// WebUserExists says whether name is a web user of cfg (the default
// "owner" when none are listed): only they have sessions and login links.
func WebUserExists(cfg config.Config, name string) bool {
	return cfg.Web.WebUser(name) || (len(cfg.Web.Users) == 0 && name == DefaultWebUser(cfg))
}

type sessionKey struct{}

// sessionOf is the session access put in the request's context.
func sessionOf(r *http.Request) sessions.Session {
	s, _ := r.Context().Value(sessionKey{}).(sessions.Session)
	return s
}

// loopbackLiteral reports a Host that is a loopback IP address, which a
// page must not be used at when links point to localhost (cookies are per
// host, and passkeys need localhost).
func loopbackLiteral(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return isLoopbackIP(strings.Trim(h, "[]"))
}

func isLoopbackIP(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}

// toLocalhost redirects a GET of the page at a loopback IP to the same
// path at localhost (when web.public_url is not set); it reports whether
// it did.
func (w *web) toLocalhost(rw http.ResponseWriter, r *http.Request) bool {
	if w.s.cfg.Web.PublicURL != "" || r.Method != http.MethodGet || !loopbackLiteral(r.Host) {
		return false
	}
	port := ""
	if _, p, err := net.SplitHostPort(r.Host); err == nil {
		port = ":" + p
	}
	http.Redirect(rw, r, "http://localhost"+port+r.URL.RequestURI(), http.StatusSeeOther)
	return true
}

// currentSession reads the request's session cookie from the database.
// gone names the user of a session that was refused (and ended) because
// they are no longer a web user of the config.
func (w *web) currentSession(r *http.Request) (tok string, s sessions.Session, ok bool, gone string) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return "", sessions.Session{}, false, ""
	}
	s, err = w.s.sessions.Get(r.Context(), c.Value)
	var g *sessions.GoneError
	switch {
	case errors.As(err, &g):
		w.s.log.Warn("web session of a removed user refused and ended", "user", g.User, "remote", r.RemoteAddr)
		return "", sessions.Session{}, false, g.User
	case err != nil:
		if !errors.Is(err, sessions.ErrNoSession) {
			w.s.log.Error("web session", "err", err)
		}
		return "", sessions.Session{}, false, ""
	}
	return c.Value, s, true, ""
}

// refuseGone answers a session or login link of a user no longer in the
// config: 403, the page saying so, and the cookie cleared.
func (w *web) refuseGone(rw http.ResponseWriter, r *http.Request, user string) {
	http.SetCookie(rw, w.cookie(r, sessionCookie, "", -1))
	w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.user_gone_title"), w.loc.T("web.user_gone", user), linkLogin)
}

// access lets through a request with a live session, wherever it comes
// from; loopback grants nothing. Without one a GET goes to the login page
// (and back after it) and anything else is refused with 401.
func (w *web) access(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.toLocalhost(rw, r) {
			return
		}
		_, s, ok, gone := w.currentSession(r)
		if gone != "" {
			w.refuseGone(rw, r, gone)
			return
		}
		if !ok {
			if r.Method == http.MethodGet {
				to := "/login"
				if next := safeNext(r.URL.RequestURI()); next != "/" {
					to += "?next=" + url.QueryEscape(next)
				}
				http.Redirect(rw, r, to, http.StatusSeeOther)
				return
			}
			w.refuse(rw, r, http.StatusUnauthorized, w.loc.T("web.log_in_title"), w.loc.T("web.log_in"), linkLogin)
			return
		}
		h.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	})
}

// sameOrigin reports whether a browser says the POST comes from this
// site: Sec-Fetch-Site, when sent, is same-origin, and Origin, when sent,
// is this host (or web.public_url's). A client that sends neither is not
// a browser another site could drive; it still needs the session and its
// CSRF token.
func (w *web) sameOrigin(r *http.Request) bool {
	if sfs := r.Header.Get("Sec-Fetch-Site"); sfs != "" && sfs != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if pu, err := url.Parse(w.s.cfg.Web.PublicURL); err == nil && pu.Host != "" {
		return strings.EqualFold(u.Scheme, pu.Scheme) && strings.EqualFold(u.Host, pu.Host)
	}
	return false
}

// readForm bounds and parses a POST form, and refuses a cross-site one.
func (w *web) readForm(rw http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(rw, r.Body, httpjson.MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		w.refuse(rw, r, http.StatusBadRequest, w.loc.T("web.bad_form_title"), w.loc.T("web.bad_form"), linkPage)
		return false
	}
	if !w.sameOrigin(r) {
		w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.cross_site_title"), w.loc.T("web.cross_site", r.Header.Get("Origin")), linkPage)
		return false
	}
	return true
}

// csrf guards a session's POST form (after access): same origin, and the
// csrf field equal to the session's token, which the server derives from
// the session and no client can choose. Anything else is refused before
// the handler runs, so nothing changes.
func (w *web) csrf(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.readForm(rw, r) {
			return
		}
		want, field := sessionOf(r).CSRF, r.PostForm.Get("csrf")
		if want == "" || field == "" || subtle.ConstantTimeCompare([]byte(want), []byte(field)) != 1 {
			w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.csrf_title"), w.loc.T("web.csrf"), linkPage)
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// loginCSRF is csrf for the login form: its token is a random cookie
// echoed in the form (there is no session yet to bind it to).
func (w *web) loginCSRF(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.readForm(rw, r) {
			return
		}
		c, err := r.Cookie(loginCSRFCookie)
		field := r.PostForm.Get("csrf")
		if err != nil || len(c.Value) < 32 || subtle.ConstantTimeCompare([]byte(c.Value), []byte(field)) != 1 {
			w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.csrf_title"), w.loc.T("web.csrf"), linkLogin)
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// loginToken returns the login form's token, setting its cookie when the
// browser has none.
func (w *web) loginToken(rw http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCSRFCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	tok := randomToken(32)
	http.SetCookie(rw, w.cookie(r, loginCSRFCookie, tok, 0))
	return tok
}

// secure reports whether the page's cookies must be Secure: it is served
// over https, here or at web.public_url behind a TLS proxy.
func (w *web) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(w.s.cfg.Web.PublicURL), "https://")
}

// cookie builds one of the page's cookies; maxAge 0 means a browser-session
// cookie, negative deletes it.
func (w *web) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: w.secure(r)}
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// sign is the HMAC of a flash cookie's payload under the process key.
func (w *web) sign(purpose, payload string) string {
	m := hmac.New(sha256.New, w.key)
	m.Write([]byte(purpose + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// startSession sets the cookie of a new session and goes to next.
func (w *web) startSession(rw http.ResponseWriter, r *http.Request, tok string, s sessions.Session, next string) {
	c := w.cookie(r, sessionCookie, tok, int(time.Until(s.ExpiresAt)/time.Second))
	c.Expires = s.ExpiresAt
	http.SetCookie(rw, c)
	http.SetCookie(rw, w.cookie(r, loginCSRFCookie, "", -1))
	http.Redirect(rw, r, next, http.StatusSeeOther)
}

// loginData is the data of login.html.
type loginData struct {
	CSRF  string
	Error string
	Next  string // where a successful login goes (a page of this site)
	Token bool   // the admin-token form is offered (web.admin_token_env is set)
}

// safeNext returns next when it is one of the web page's own GET pages (a
// path on this host: "/", "/history…", "/r/…", "/requests/…", "/account"),
// else "/": a login never redirects anywhere else (no open redirect).
func safeNext(next string) string {
	if len(next) > 512 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\x00\r\n") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	switch p := u.Path; {
	case path.Clean(p) != p:
		return "/"
	case p == "/", p == "/history", p == "/account", strings.HasPrefix(p, "/r/"), strings.HasPrefix(p, "/requests/"):
		return u.RequestURI()
	}
	return "/"
}

// loginPage is GET /login: how to get in (the link from `gateway login`,
// or the admin token when one is configured).
func (w *web) loginPage(rw http.ResponseWriter, r *http.Request) {
	if w.toLocalhost(rw, r) {
		return
	}
	next := safeNext(r.URL.Query().Get("next"))
	if _, _, ok, _ := w.currentSession(r); ok {
		http.Redirect(rw, r, next, http.StatusSeeOther)
		return
	}
	w.render(rw, r, http.StatusOK, "login.html", loginData{CSRF: w.loginToken(rw, r), Next: next,
		Token: w.s.cfg.Web.AdminToken != ""})
}

// loginLink is GET /login/{token}: a one-time link starts a session for
// its user. Opening it is enough (no form): it is used once, within
// sessions.LinkTTL, and only its hash is stored.
func (w *web) loginLink(rw http.ResponseWriter, r *http.Request) {
	if w.toLocalhost(rw, r) {
		return
	}
	src := sourceOf(r)
	tok, s, err := w.s.sessions.UseLink(r.Context(), r.PathValue("token"))
	var gone *sessions.GoneError
	if errors.As(err, &gone) {
		w.s.log.Warn("web login link of a removed user refused", "user", gone.User, "remote", r.RemoteAddr)
		w.refuseGone(rw, r, gone.User)
		return
	}
	if err != nil {
		if !errors.Is(err, sessions.ErrInvalidLink) {
			w.fail(rw, r, err)
			return
		}
		// Throttled as a wrong token is: past a few, 429 with Retry-After.
		wait := w.throttle.fail(src, "")
		w.s.log.Warn("web login link refused", "remote", r.RemoteAddr) // never the link
		status := http.StatusForbidden
		if wait > 0 {
			status = http.StatusTooManyRequests
			rw.Header().Set("Retry-After", strconv.Itoa(retrySeconds(wait)))
		}
		w.refuse(rw, r, status, w.loc.T("web.link_bad_title"), w.loc.T("web.link_bad"), linkLogin)
		return
	}
	w.throttle.succeed(src, s.User)
	w.s.log.Info("web login", "user", s.User, "via", "link", "remote", r.RemoteAddr)
	w.startSession(rw, r, tok, s, "/")
}

// login is POST /login with the admin token (web.admin_token_env), for
// scripts: compared in constant time over its hash, so not even its length
// leaks. It logs in as DefaultWebUser.
func (w *web) login(rw http.ResponseWriter, r *http.Request) {
	admin := w.s.cfg.Web.AdminToken
	next := safeNext(r.PostForm.Get("next"))
	if admin == "" {
		w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.login_off_title"), w.loc.T("web.login_off"), linkLogin)
		return
	}
	user, src := DefaultWebUser(w.s.cfg), sourceOf(r)
	got := sha256.Sum256([]byte(r.PostForm.Get("token")))
	want := sha256.Sum256([]byte(admin))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		// The throttle slows wrong attempts (429 with Retry-After while it
		// holds), per source and per user, and never the right token.
		wait := w.throttle.fail(src, user)
		w.s.log.Warn("web login failed", "user", user, "remote", r.RemoteAddr) // never the token
		status, msg := http.StatusUnauthorized, w.loc.T("web.login_wrong")
		if wait > 0 {
			status, msg = http.StatusTooManyRequests, w.loc.T("web.login_slow", retrySeconds(wait))
			rw.Header().Set("Retry-After", strconv.Itoa(retrySeconds(wait)))
		}
		w.render(rw, r, status, "login.html", loginData{CSRF: w.loginToken(rw, r), Error: msg, Next: next, Token: true})
		return
	}
	w.logIn(rw, r, src, user, "admin_token", next)
}

// logIn starts a session for user, proved by via ("admin_token",
// "passkey"), and goes to next.
func (w *web) logIn(rw http.ResponseWriter, r *http.Request, src, user, via, next string) {
	tok, s, err := w.s.sessions.Start(r.Context(), user, via)
	if err != nil {
		w.fail(rw, r, err)
		return
	}
	w.throttle.succeed(src, user)
	w.s.log.Info("web login", "user", user, "via", via, "remote", r.RemoteAddr)
	w.startSession(rw, r, tok, s, next)
}

func retrySeconds(d time.Duration) int { return max(int((d+time.Second-1)/time.Second), 1) }

// sourceOf is who a login attempt comes from, for the throttle: the
// connecting address (behind a proxy, the proxy's: the right credential
// still always gets in).
func sourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// logout is POST /logout: the session ends here and now, on every
// replica (it is a row in the database).
func (w *web) logout(rw http.ResponseWriter, r *http.Request) {
	if tok, s, ok, _ := w.currentSession(r); ok {
		if err := w.s.sessions.End(r.Context(), tok); err != nil {
			w.fail(rw, r, err)
			return
		}
		w.s.log.Info("web logout", "user", s.User)
	}
	http.SetCookie(rw, w.cookie(r, sessionCookie, "", -1))
	http.Redirect(rw, r, "/login", http.StatusSeeOther)
}

// flash is the one-line message shown once after a POST.
type flash struct {
	Error bool
	Text  string
}

// setFlash stores f in a short-lived signed cookie for the next GET /.
// A cookie rather than a query parameter: nobody can craft a link that
// makes the page say something the gateway did not.
func (w *web) setFlash(rw http.ResponseWriter, r *http.Request, f flash) {
	kind := "ok"
	if f.Error {
		kind = "err"
	}
	payload := kind + "." + base64.RawURLEncoding.EncodeToString([]byte(f.Text))
	http.SetCookie(rw, w.cookie(r, flashCookie, payload+"."+w.sign("flash", payload), 60))
}

// takeFlash reads and clears the flash cookie.
func (w *web) takeFlash(rw http.ResponseWriter, r *http.Request) *flash {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(rw, w.cookie(r, flashCookie, "", -1))
	i := strings.LastIndexByte(c.Value, '.')
	if i < 0 || !hmac.Equal([]byte(c.Value[i+1:]), []byte(w.sign("flash", c.Value[:i]))) {
		return nil
	}
	kind, text, _ := strings.Cut(c.Value[:i], ".")
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return nil
	}
	return &flash{Error: kind == "err", Text: string(b)}
}

// accountData is what account.html reads.
type accountData struct {
	User    string
	CSRF    string
	Expires time.Time
	Flash   *flash
	// Passkeys are the user's passkeys in use.
	Passkeys []passkeys.Passkey
	// Push is the Notifications section (web_push.go); nil: none.
	Push *pushAccount
}

// account is GET /account: the signed-in user, as an approver, and the
// session's end.
func (w *web) account(rw http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	keys, err := w.s.passkeys.List(r.Context(), s.User)
	if err != nil {
		w.fail(rw, r, err)
		return
	}
	for i := range keys {
		keys[i].Name = cards.SafeIn(keys[i].Name, w.loc)
	}
	w.render(rw, r, http.StatusOK, "account.html", &accountData{User: s.User, CSRF: s.CSRF, Expires: s.ExpiresAt,
		Flash: w.takeFlash(rw, r), Passkeys: keys, Push: w.pushAccount(r.Context(), s.User)})
}
