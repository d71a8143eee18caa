package passkeystest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var (
	csrfRE  = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	flashRE = regexp.MustCompile(`id="flash">([^<]*)<`)
)

// Web is a web page session driven over HTTP, as a browser with a
// passkey would drive it.
type Web struct {
	tb   testing.TB
	Base string // the page's origin: http://localhost:<port>
	c    *http.Client
	csrf string
}

// Login opens a one-time login link (made for base) and returns the
// session.
func Login(tb testing.TB, base, link string) *Web {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	w := &Web{tb: tb, Base: base, c: &http.Client{Jar: jar}}
	resp, err := w.c.Get(link)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfRE.FindSubmatch(b)
	if m == nil {
		tb.Fatalf("no csrf token after the login link:\n%s", b)
	}
	w.csrf = string(m[1])
	return w
}

// Post posts a form of the session (its csrf added) and returns the
// status and the page it ends on.
func (w *Web) Post(path string, form url.Values) (int, string) {
	w.tb.Helper()
	form.Set("csrf", w.csrf)
	resp, err := w.c.PostForm(w.Base+path, form)
	if err != nil {
		w.tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (w *Web) begin(path string, form url.Values) Begun {
	w.tb.Helper()
	st, body := w.Post(path, form)
	var b Begun
	if err := json.Unmarshal([]byte(body), &b); err != nil || st != http.StatusOK {
		w.tb.Fatalf("%s: %d %s", path, st, body)
	}
	return b
}

// Register adds a passkey of a named name on the Account page.
func (w *Web) Register(a *Authenticator, name string) {
	w.tb.Helper()
	b := w.begin("/web/passkeys/begin", url.Values{})
	cred, err := a.Create(b)
	if err != nil {
		w.tb.Fatal(err)
	}
	if _, page := w.Post("/web/passkeys/add", url.Values{"ceremony": {b.Ceremony}, "credential": {cred}, "name": {name}}); !strings.Contains(page, name) {
		w.tb.Fatalf("passkey %s not added:\n%s", name, page)
	}
}

// Decide runs the step-up of decision on request id with a and returns
// the flash the page then shows.
func (w *Web) Decide(a *Authenticator, id, decision string) string {
	w.tb.Helper()
	return w.DecideWith(a, url.Values{"id": {id}, "decision": {decision}})
}

// DecideWith runs the step-up of the card's form (id, decision, and
// scope_index or duration) with a and returns the flash the page then
// shows.
func (w *Web) DecideWith(a *Authenticator, form url.Values) string {
	w.tb.Helper()
	b := w.begin("/web/decide/passkey/begin", form)
	cred, err := a.Get(b)
	if err != nil {
		w.tb.Fatal(err)
	}
	_, page := w.Post("/web/decide/passkey", url.Values{"ceremony": {b.Ceremony}, "credential": {cred}})
	if m := flashRE.FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return ""
}
