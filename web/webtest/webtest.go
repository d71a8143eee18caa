// Package webtest drives the web page of a whole gateway in tests: the
// gateway with its agent, logins through one-time links, a browser-like
// client and the page's forms, and headless Chromium. Tests of the page
// (package web) and end-to-end tests of the gateway share it.
package webtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
)

// AgentToken is agent a1's token.
const AgentToken = "tok-a1-web-test-012345678"

// NewApp builds a gateway on a fresh SQLite file with one agent, a1
// (Supervised, principal web/owner, cards on the web page).
func NewApp(t *testing.T, mutate func(*config.Config)) *gateway.App {
	t.Helper()
	return NewAppAt(t, nil, mutate)
}

// NewAppAt is NewApp on the clock now (nil: the real one).
func NewAppAt(t *testing.T, now func() time.Time, mutate func(*config.Config)) *gateway.App {
	t.Helper()
	cfg := gatewaytest.Config(t, gatewaytest.Agent("a1", AgentToken, false))
	cfg.Server.Timezone = "Asia/Tokyo" // not the machine's zone, and no summer time: times must say JST
	if mutate != nil {
		mutate(&cfg)
	}
	return gatewaytest.New(t, cfg, gateway.AppOptions{Home: t.TempDir(), Now: now})
}

// Server serves app on a real loopback listener, at
// http://localhost:<port> as the gateway's links are, with a browser-like
// client (cookie jar, follows redirects) logged in as owner through a
// one-time login link.
func Server(t *testing.T, app *gateway.App) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(app.Server.Handler())
	t.Cleanup(srv.Close)
	srv.URL = strings.Replace(srv.URL, "http://127.0.0.1:", "http://localhost:", 1)
	c := BrowserClient(t)
	Login(t, app, c, srv.URL, "owner")
	return srv, c
}

// PageAs logs in as user on the gateway at base (through a login
// link; base's 127.0.0.1 becomes localhost, as the links name it) and
// returns the web page's status and body.
func PageAs(t *testing.T, app *gateway.App, base, user string) (int, string) {
	t.Helper()
	base = strings.Replace(base, "http://127.0.0.1:", "http://localhost:", 1)
	c := BrowserClient(t)
	Login(t, app, c, base, user)
	return GetPath(t, c, base+"/")
}

// BrowserClient is a client with a cookie jar that follows redirects.
func BrowserClient(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// LoginLink makes a one-time login link for user at base.
func LoginLink(t *testing.T, app *gateway.App, base, user string) string {
	t.Helper()
	link, _, err := app.LoginLink(context.Background(), base, user)
	if err != nil {
		t.Fatalf("login link: %v", err)
	}
	return link
}

// Login opens a new login link for user with c, which then holds the
// session's cookie.
func Login(t *testing.T, app *gateway.App, c *http.Client, base, user string) {
	t.Helper()
	resp, err := c.Get(LoginLink(t, app, base, user))
	if err != nil {
		t.Fatalf("open the login link: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		t.Fatalf("login link: %d at %s\n%s", resp.StatusCode, resp.Request.URL, body)
	}
}

// Submit posts an approval request through the agent API and returns
// the request it answers.
func Submit(t *testing.T, baseURL string, body map[string]any) approvals.Request {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/requests", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+AgentToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/requests: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/requests: %d %s, want 202 (pending)", resp.StatusCode, raw)
	}
	var r approvals.Request
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("decode request: %v", err)
	}
	return r
}

// Fetch reads a request back through the agent API.
func Fetch(t *testing.T, baseURL, id string) approvals.Request {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, baseURL+"/v1/requests/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+AgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /v1/requests/%s: %v", id, err)
	}
	defer resp.Body.Close()
	var r approvals.Request
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decode request: %v", err)
	}
	return r
}

// FSWrite is a request body to write target.
func FSWrite(target string) map[string]any {
	return map[string]any{"capability": "fs:write", "target": target, "intent": "save the invoice",
		"executor": "invoice_saver", "args": map[string]any{"path": target}}
}

// CodeExec is a request body to run cmd.
func CodeExec(cmd string) map[string]any {
	return map[string]any{"capability": "code:exec", "target": cmd, "intent": "list the files", "executor": "shell"}
}

// Page fetches / and returns its body.
func Page(t *testing.T, c *http.Client, baseURL string) string {
	t.Helper()
	resp, err := c.Get(baseURL + "/")
	if err != nil {
		t.Fatalf("GET /: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// CSRF is the page's CSRF field.
func CSRF(t *testing.T, page string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field in the page:\n%s", page)
	}
	return m[1]
}

// PostForm posts a form and returns the final status and body (after the
// 303 back to the page, when there is one).
func PostForm(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Card cuts one request's card out of the page.
func Card(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `id="req-`+id+`"`)
	if i < 0 {
		t.Fatalf("no card for %s in the page", id)
	}
	j := strings.Index(page[i:], "</article>")
	return page[i : i+j]
}

// GetPath fetches u and returns its status and body.
func GetPath(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// handlers holds each App's handler for ServeFrom, made once: Handler
// builds the routes anew, and draws the page's icons again, each time.
var handlers sync.Map // *gateway.App → http.Handler

// ServeFrom runs one request through the handler, as from remoteAddr.
func ServeFrom(app *gateway.App, r *http.Request, remoteAddr string) *httptest.ResponseRecorder {
	r.RemoteAddr = remoteAddr
	rec := httptest.NewRecorder()
	h, ok := handlers.Load(app)
	if !ok {
		h, _ = handlers.LoadOrStore(app, app.Server.Handler())
	}
	h.(http.Handler).ServeHTTP(rec, r)
	return rec
}

// Flash is the flash of a page the web session ended on.
func Flash(page string) string {
	if i := strings.Index(page, `id="flash">`); i >= 0 {
		rest := page[i+len(`id="flash">`):]
		if j := strings.Index(rest, "<"); j >= 0 {
			return rest[:j]
		}
	}
	return ""
}

// Form is a form of key, value pairs.
func Form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// Chromium returns a headless-capable browser binary, or fails the
// test in CI (which must have one: .ci/run installs it) and skips it on a
// developer machine without one.
func Chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium, chromium-browser or google-chrome on PATH; install one " +
		"(Debian: apt-get install chromium) to run the browser test"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI must have it)")
	}
	t.Skip(msg)
	return ""
}

// Serve serves app on a loopback port until the test ends (or ctx does)
// and returns its base URL; a failed Serve fails the test.
func Serve(t *testing.T, ctx context.Context, app *gateway.App) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- app.Serve(srvCtx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	// The gateway's links name localhost (a secure context for the
	// browser): the page is used there, logged in through a login link.
	return "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
}

// NewBrowser starts headless Chromium in a phone-sized window with its
// profile in dir, and the function that ends it.
func NewBrowser(ctx context.Context, chromium, dir string) (context.Context, func()) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(dir),
		chromedp.WindowSize(412, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	return browser, func() {
		cancelBrowser()
		cancelAlloc()
	}
}
