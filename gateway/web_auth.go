package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
)

// Cookies of the web page. All are HttpOnly and SameSite=Strict: no script
// reads them and no other site's page sends them.
const (
	sessionCookie = "gw_session"
	csrfCookie    = "gw_csrf"
	flashCookie   = "gw_flash"
)

const (
	// sessionTTL is how long a web login lasts.
	sessionTTL = 12 * time.Hour
	// loginLockout bounds failed logins: past loginMaxFailures in this
	// window every login is refused until the window moves on, so the admin
	// token cannot be guessed at network speed.
	loginLockout     = time.Minute
	loginMaxFailures = 10
)

// isLocal reports whether the client needs no login: it connects from
// loopback, no proxy header says it is really somewhere else, and the Host
// it asked for is a loopback name. The last rule stops DNS rebinding: a
// hostile site whose name resolves to 127.0.0.1 reaches a loopback listener
// from the owner's own browser, but with its own name in Host.
func (w *web) isLocal(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !isLoopbackIP(host) || !loopbackHost(r.Host) {
		return false
	}
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(v, ",") {
			if !isLoopbackIP(strings.TrimSpace(hop)) {
				return false
			}
		}
	}
	for _, v := range r.Header.Values("X-Real-Ip") {
		if !isLoopbackIP(strings.TrimSpace(v)) {
			return false
		}
	}
	for _, v := range r.Header.Values("Forwarded") { // RFC 7239: for=1.2.3.4;proto=https, for="[::1]:80"
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if !ok || !strings.EqualFold(k, "for") {
					continue
				}
				val = strings.Trim(val, `"`)
				if h, _, err := net.SplitHostPort(val); err == nil {
					val = h
				}
				if !isLoopbackIP(strings.Trim(val, "[]")) {
					return false
				}
			}
		}
	}
	return true
}

func isLoopbackIP(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.ToLower(strings.Trim(h, "[]"))
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || isLoopbackIP(h)
}

// access lets loopback clients through, and others with a login session
// when an admin token is configured. Anyone else gets a plain explanation.
func (w *web) access(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch {
		case w.isLocal(r):
		case w.s.cfg.Web.AdminToken == "":
			w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.local_only_title"), w.loc.T("web.local_only"), linkNone)
			return
		case !w.validSession(r):
			if r.Method == http.MethodGet {
				// Back to the page asked for after the login: a card's link
				// to /r/{id} lands on that request, not on the list.
				to := "/login"
				if next := safeNext(r.URL.RequestURI()); next != "/" {
					to += "?next=" + url.QueryEscape(next)
				}
				http.Redirect(rw, r, to, http.StatusSeeOther)
				return
			}
			w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.log_in_title"), w.loc.T("web.log_in"), linkLogin)
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// csrf guards a POST form: the body is bounded, the hidden csrf field must
// equal the csrf cookie (constant time), and a browser's Origin, when
// sent, must be this host. Anything else is refused before the handler
// runs, so nothing changes.
func (w *web) csrf(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(rw, r.Body, MaxBodyBytes)
		if err := r.ParseForm(); err != nil {
			w.refuse(rw, r, http.StatusBadRequest, w.loc.T("web.bad_form_title"), w.loc.T("web.bad_form"), linkPage)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
				w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.cross_site_title"), w.loc.T("web.cross_site", o), linkPage)
				return
			}
		}
		c, err := r.Cookie(csrfCookie)
		field := r.PostForm.Get("csrf")
		if err != nil || c.Value == "" || field == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(field)) != 1 {
			w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.csrf_title"), w.loc.T("web.csrf"), linkPage)
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// csrfToken returns the browser's CSRF token, setting a fresh cookie when
// it has none.
func (w *web) csrfToken(rw http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	tok := randomToken(32)
	http.SetCookie(rw, w.cookie(r, csrfCookie, tok, 0))
	return tok
}

// cookie builds one of the page's cookies; maxAge 0 means a browser-session
// cookie, negative deletes it.
func (w *web) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// sign is the HMAC of a cookie's payload under the process key; purpose
// keeps a flash cookie from passing as a session.
func (w *web) sign(purpose, payload string) string {
	m := hmac.New(sha256.New, w.key)
	m.Write([]byte(purpose + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession is a session cookie value: "<id>.<expiry unix>.<hmac>".
func (w *web) newSession() (string, time.Time) {
	exp := w.s.now().Add(sessionTTL)
	payload := randomToken(16) + "." + strconv.FormatInt(exp.Unix(), 10)
	return payload + "." + w.sign("session", payload), exp
}

// session checks a session cookie value and returns its id and expiry.
func (w *web) session(v string) (id string, exp time.Time, ok bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return "", time.Time{}, false
	}
	payload, mac := v[:i], v[i+1:]
	if !hmac.Equal([]byte(mac), []byte(w.sign("session", payload))) {
		return "", time.Time{}, false
	}
	id, unix, _ := strings.Cut(payload, ".")
	secs, err := strconv.ParseInt(unix, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	exp = time.Unix(secs, 0)
	if !w.s.now().Before(exp) {
		return "", time.Time{}, false
	}
	w.mu.Lock()
	_, out := w.loggedOut[id]
	w.mu.Unlock()
	return id, exp, !out
}

func (w *web) validSession(r *http.Request) bool {
	if w.s.cfg.Web.AdminToken == "" {
		return false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	_, _, ok := w.session(c.Value)
	return ok
}

// loginData is the data of login.html.
type loginData struct {
	CSRF  string
	Error string
	Next  string // where a successful login goes (a page of this site)
}

// safeNext returns next when it is one of the web page's own GET pages (a
// path on this host: "/", "/history…", "/r/…", "/requests/…"), else "/":
// a login never redirects anywhere else (no open redirect).
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
	case p == "/", p == "/history", strings.HasPrefix(p, "/r/"), strings.HasPrefix(p, "/requests/"):
		return u.RequestURI()
	}
	return "/"
}

// loginPage is GET /login.
func (w *web) loginPage(rw http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	switch {
	case w.isLocal(r), w.validSession(r):
		http.Redirect(rw, r, next, http.StatusSeeOther)
	case w.s.cfg.Web.AdminToken == "":
		w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.login_off_title"), w.loc.T("web.login_off"), linkNone)
	default:
		w.render(rw, r, http.StatusOK, "login.html", loginData{CSRF: w.csrfToken(rw, r), Next: next})
	}
}

// login is POST /login: the admin token, compared in constant time (over
// its hash, so not even its length leaks), and a signed session cookie.
func (w *web) login(rw http.ResponseWriter, r *http.Request) {
	admin := w.s.cfg.Web.AdminToken
	if admin == "" {
		w.refuse(rw, r, http.StatusForbidden, w.loc.T("web.login_off_title"), w.loc.T("web.login_off"), linkNone)
		return
	}
	if w.lockedOut() {
		rw.Header().Set("Retry-After", strconv.Itoa(int(loginLockout/time.Second)))
		w.render(rw, r, http.StatusTooManyRequests, "login.html", loginData{CSRF: w.csrfToken(rw, r),
			Error: w.loc.T("web.login_locked"), Next: safeNext(r.PostForm.Get("next"))})
		return
	}
	got := sha256.Sum256([]byte(r.PostForm.Get("token")))
	want := sha256.Sum256([]byte(admin))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		w.recordFailure()
		w.s.log.Warn("web login failed", "remote", r.RemoteAddr) // never the token
		w.render(rw, r, http.StatusUnauthorized, "login.html", loginData{CSRF: w.csrfToken(rw, r),
			Error: w.loc.T("web.login_wrong"), Next: safeNext(r.PostForm.Get("next"))})
		return
	}
	v, exp := w.newSession()
	c := w.cookie(r, sessionCookie, v, int(sessionTTL/time.Second))
	c.Expires = exp
	http.SetCookie(rw, c)
	w.s.log.Info("web login", "remote", r.RemoteAddr)
	http.Redirect(rw, r, safeNext(r.PostForm.Get("next")), http.StatusSeeOther)
}

// logout is POST /logout: the session ends here and now, also for a copy
// of the cookie, until the process restarts (which ends every session).
func (w *web) logout(rw http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if id, exp, ok := w.session(c.Value); ok {
			w.mu.Lock()
			now := w.s.now()
			for k, e := range w.loggedOut {
				if !now.Before(e) {
					delete(w.loggedOut, k)
				}
			}
			w.loggedOut[id] = exp
			w.mu.Unlock()
		}
	}
	http.SetCookie(rw, w.cookie(r, sessionCookie, "", -1))
	http.Redirect(rw, r, "/login", http.StatusSeeOther)
}

func (w *web) lockedOut() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cut := w.s.now().Add(-loginLockout)
	kept := w.failures[:0]
	for _, t := range w.failures {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	w.failures = kept
	return len(w.failures) >= loginMaxFailures
}

func (w *web) recordFailure() {
	w.mu.Lock()
	w.failures = append(w.failures, w.s.now())
	w.mu.Unlock()
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
