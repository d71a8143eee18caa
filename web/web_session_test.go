package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/sessions"
	"github.com/metnos/gateway/web/webtest"
)

// TestWeb_TwoUsersTwoApprovers: two named web users are two approvers of
// a quorum-2 route: each one's Allow counts once, as web:<name>.
func TestWeb_TwoUsersTwoApprovers(t *testing.T) {
	app := webtest.NewApp(t, func(c *config.Config) {
		c.Web.Users = []config.WebUser{{Name: "owner"}, {Name: "roberto"}}
		c.Approvals.Routes = []config.Route{{Capability: "fs:write", Approvers: []string{"web:owner", "web:roberto"}, Quorum: 2}}
	})
	srv, owner := webtest.Server(t, app)
	roberto := webtest.BrowserClient(t)
	webtest.Login(t, app, roberto, srv.URL, "roberto")
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/q.txt"))
	allow := func(c *http.Client) string {
		form := url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {webtest.CSRF(t, webtest.Page(t, c, srv.URL))}}
		_, page := webtest.PostForm(t, c, srv.URL+"/web/decide", form, nil)
		return page
	}
	allow(owner)
	if got := webtest.Fetch(t, srv.URL, r.ID); got.Status != approvals.StatusPending || len(got.Approvals) != 1 ||
		got.Approvals[0].Approver != "web:owner" {
		t.Fatalf("after owner's allow: %s %+v", got.Status, got.Approvals)
	}
	if page := allow(owner); !strings.Contains(page, `class="flash err"`) {
		t.Errorf("owner's second allow was not refused:\n%s", page)
	}
	allow(roberto)
	got := webtest.Fetch(t, srv.URL, r.ID)
	if got.Status != approvals.StatusAllowed || len(got.Approvals) != 2 || got.Approvals[1].Approver != "web:roberto" ||
		got.Approvals[1].By != "web:roberto" {
		t.Fatalf("after roberto's allow: %s %+v", got.Status, got.Approvals)
	}
	_, account := webtest.GetPath(t, roberto, srv.URL+"/account")
	if !strings.Contains(account, `<strong id="account-user">roberto</strong>`) {
		t.Errorf("roberto's account page:\n%s", account)
	}
}

// TestWeb_LogoutAll: ending every session (gateway logout --all) sends
// every browser back to the login.
func TestWeb_LogoutAll(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	n, err := sessions.New(app.DB, time.Now, nil).EndAll(context.Background()) // what gateway logout --all does
	if err != nil || n != 1 {
		t.Fatalf("EndAll = %d, %v; want 1", n, err)
	}
	resp, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/login" {
		t.Errorf("after logout --all, / went to %s, want /login", resp.Request.URL)
	}
}

// TestWeb_SecureCookiesBehindTLSProxy: with an https web.public_url the
// session cookie is Secure even though the gateway itself speaks plain
// HTTP (its TLS proxy in front).
func TestWeb_SecureCookiesBehindTLSProxy(t *testing.T) {
	app := webtest.NewApp(t, func(c *config.Config) { c.Web.PublicURL = "https://gw.example.com" })
	link := webtest.LoginLink(t, app, "https://gw.example.com", "owner")
	if !strings.HasPrefix(link, "https://gw.example.com/login/") {
		t.Fatalf("link %q does not use web.public_url", link)
	}
	u, _ := url.Parse(link)
	rec := webtest.ServeFrom(app, httptest.NewRequest("GET", "http://gw.example.com"+u.Path, nil), "10.0.0.2:4000")
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login link: %d\n%s", rec.Code, rec.Body)
	}
	var sess *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == "gw_session" {
			sess = c
		}
	}
	if sess == nil || !sess.Secure || !sess.HttpOnly || sess.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v, want Secure HttpOnly SameSite=Strict", sess)
	}
	// No redirect to localhost when the page has a public URL.
	rec = webtest.ServeFrom(app, httptest.NewRequest("GET", "http://127.0.0.1:8080/login", nil), "127.0.0.1:4000")
	if rec.Code != http.StatusOK {
		t.Errorf("GET /login at 127.0.0.1 with a public URL: %d", rec.Code)
	}
}

// TestServer_SlowBodyCutOff: a client that sends its body a byte at a
// time is cut off at the body deadline, with no token needed; a long-poll
// whose body came in time keeps waiting past it.
func TestServer_SlowBodyCutOff(t *testing.T) {
	g := gatewaytest.Start(t, gatewaytest.Config(t, gatewaytest.Agent("a1", webtest.AgentToken, false)),
		gateway.AppOptions{Home: t.TempDir(), BodyTimeout: 300 * time.Millisecond})
	app, api := g.App, g.URL
	addr := strings.TrimPrefix(api, "http://127.0.0.1")
	for _, path := range []string{"/v1/requests", "/login", "/web/decide"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", "127.0.0.1"+addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, "POST "+path+" HTTP/1.1\r\nHost: localhost"+addr+
				"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"); err != nil {
				t.Fatal(err)
			}
			// Trickle: one byte now and then, never the whole body. The
			// server must end the exchange (answer and close) by itself.
			done := make(chan error, 1)
			go func() {
				_, err := io.ReadAll(bufio.NewReader(conn))
				done <- err
			}()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			deadline := time.After(20 * time.Second)
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					if _, err := io.WriteString(conn, " "); err != nil {
						return // closed by the server
					}
				case <-deadline:
					t.Fatal("the slow body was not cut off")
				}
			}
		})
	}
	// A long-poll whose body came in time outlives the body deadline.
	got := make(chan approvals.Request, 1)
	go func() {
		b, _ := json.Marshal(webtest.FSWrite("/home/u/slow.txt"))
		req, _ := http.NewRequest("POST", api+"/v1/requests?wait=30s", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+webtest.AgentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			got <- approvals.Request{}
			return
		}
		defer resp.Body.Close()
		var out approvals.Request
		_ = json.NewDecoder(resp.Body).Decode(&out)
		got <- out
	}()
	var pending []approvals.Request
	for len(pending) == 0 {
		var err error
		if pending, err = app.Service.ListPending(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// Not synchronisation: the scenario needs the wait to run past the
	// 300 ms body deadline before the decision ends it.
	time.Sleep(time.Second)
	if _, err := app.Service.Decide(context.Background(), pending[0].ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner", Name: "owner"}); err != nil {
		t.Fatal(err)
	}
	if out := <-got; out.Status != approvals.StatusDenied {
		t.Errorf("long-poll answered %q, want denied", out.Status)
	}
}
