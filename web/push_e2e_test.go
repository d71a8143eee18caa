package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/web/push"
	"github.com/metnos/gateway/web/push/pushtest"
	"github.com/metnos/gateway/web/webtest"
)

// The end-to-end tests of Web Push: a whole gateway on a loopback port,
// the real webpush-go client posting to pushtest's fake push service,
// which verifies each VAPID JWT and decrypts each payload with the keys
// of a "browser" the test made.

const pushWait = time.Minute // a bound for what must happen, never a wait: a busy machine passes 15 s

type pushGW struct {
	t     *testing.T
	fake  *pushtest.Server
	cfg   config.Config
	opts  gateway.AppOptions
	app   *gateway.App
	base  string
	gw    *gatewaytest.Gateway
	logs  strings.Builder
	logMu sync.Mutex
}

func (g *pushGW) Write(p []byte) (int, error) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.logs.Write(p)
}

func (g *pushGW) log() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.logs.String()
}

// newPushGW starts a gateway whose agent a1 sends its cards to "web",
// with web users anna and bob, on clock (nil: the real one).
func newPushGW(t *testing.T, clock *testclock.Clock, edit func(*config.Config)) *pushGW {
	t.Helper()
	g := &pushGW{t: t, fake: pushtest.New(t)}
	a := gatewaytest.Agent("a1", webtest.AgentToken, false)
	a.Notify = []string{"web"}
	cfg := gatewaytest.Config(t, a)
	cfg.Vaglio.JudgeThreshold = 0
	cfg.Web.Users = []config.WebUser{{Name: "anna"}, {Name: "bob"}}
	if edit != nil {
		edit(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	g.cfg = cfg
	g.opts = gateway.AppOptions{Logger: slog.New(slog.NewTextHandler(g, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PushServices: []string{g.fake.URL}}
	if clock != nil {
		g.opts.Now = clock.Now
	}
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.log())
		}
	})
	g.start()
	return g
}

// start serves the gateway: the first time on a port of its own, after
// a stop on the same one (the devices' links stay good).
func (g *pushGW) start() {
	t := g.t
	t.Helper()
	if g.gw == nil {
		g.gw = gatewaytest.Start(t, g.cfg, g.opts)
	} else {
		g.gw = g.gw.Restart(t, g.cfg, g.opts)
	}
	g.app = g.gw.App
	g.base = strings.Replace(g.gw.URL, "http://127.0.0.1:", "http://localhost:", 1)
}

func (g *pushGW) stop() {
	if g.gw != nil {
		g.gw.Close()
	}
}

// recorded waits until the gateway recorded its push of request id to
// device: a push the push service took but the gateway had not yet
// recorded when it stopped goes out again after the restart (at least
// once; the notification's tag makes the second replace the first).
func (g *pushGW) recorded(id string, d *pushtest.Device) {
	g.t.Helper()
	deadline := time.Now().Add(pushWait)
	for {
		var n int
		if err := g.app.DB.QueryRowContext(context.Background(),
			`SELECT COUNT(*) FROM push_sent p JOIN push_subscriptions s ON s.id = p.subscription_id
			WHERE p.request_id = $1 AND s.endpoint = $2`, id, d.Endpoint).Scan(&n); err != nil {
			g.t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the push of %s to %s was not recorded within %s", id, d.ID, pushWait)
		}
		time.Sleep(20 * time.Millisecond) // polling for a condition, bounded by the deadline
	}
}

func (g *pushGW) restart() {
	g.t.Helper()
	g.stop()
	g.start()
}

// user logs in as name with a browser-like client.
func (g *pushGW) user(name string) *http.Client {
	g.t.Helper()
	c := webtest.BrowserClient(g.t)
	webtest.Login(g.t, g.app, c, g.base, name)
	return c
}

var pushKeyAttr = regexp.MustCompile(`id="push" data-key="([^"]+)"`)

// account reads the Account page: its VAPID key and CSRF token.
func (g *pushGW) account(c *http.Client) (page, key, csrf string) {
	g.t.Helper()
	status, page := webtest.GetPath(g.t, c, g.base+"/account")
	if status != http.StatusOK {
		g.t.Fatalf("GET /account: %d", status)
	}
	m := pushKeyAttr.FindStringSubmatch(page)
	if m == nil {
		g.t.Fatalf("no VAPID key on the Account page:\n%s", page)
	}
	return page, m[1], webtest.CSRF(g.t, page)
}

// subscribe does what Turn on notifications does in a browser: subscribe
// at the push service with the page's key, then post the subscription.
func (g *pushGW) subscribe(c *http.Client, device string) *pushtest.Device {
	g.t.Helper()
	_, key, csrf := g.account(c)
	d := g.fake.Subscribe(g.t, key)
	status, body := webtest.PostForm(g.t, c, g.base+"/web/push/subscribe", url.Values{"csrf": {csrf}, "endpoint": {d.Endpoint},
		"p256dh": {d.P256dh}, "auth": {d.Auth}, "device": {device}}, nil)
	if status != http.StatusOK {
		g.t.Fatalf("subscribe: %d %s", status, body)
	}
	return d
}

// ask posts a request as agent a1 and returns it (pending).
func (g *pushGW) ask(body map[string]any) approvals.Request {
	g.t.Helper()
	return webtest.Submit(g.t, g.base, body)
}

// act posts a notification action's token as the service worker does.
func (g *pushGW) act(token string) (int, string) {
	g.t.Helper()
	resp, err := http.PostForm(g.base+"/web/push/act", url.Values{"token": {token}})
	if err != nil {
		g.t.Fatalf("POST /web/push/act: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// next reads the next push and decodes its payload.
func (g *pushGW) next() (pushtest.Push, push.Payload) {
	g.t.Helper()
	p := g.fake.Next(g.t, pushWait)
	var pl push.Payload
	if err := json.Unmarshal(p.Payload, &pl); err != nil {
		g.t.Fatalf("payload is not JSON: %v\n%s", err, p.Payload)
	}
	return p, pl
}

// nextFor reads n pushes and returns them by device.
func (g *pushGW) nextN(n int) map[string]push.Payload {
	g.t.Helper()
	out := map[string]push.Payload{}
	for range n {
		p, pl := g.next()
		if _, dup := out[p.Device]; dup {
			g.t.Fatalf("a second push to device %s before the others: %+v", p.Device, pl)
		}
		out[p.Device] = pl
	}
	return out
}

func (g *pushGW) metric(name string) string {
	g.t.Helper()
	_, body := webtest.GetPath(g.t, http.DefaultClient, g.base+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, name+" ") {
			return strings.TrimPrefix(line, name+" ")
		}
	}
	return ""
}

// metricIs waits until /metrics shows want for name: a push is counted
// just after the push service answered, so a little after the test saw it.
func (g *pushGW) metricIs(name, want string) {
	g.t.Helper()
	deadline := time.Now().Add(pushWait)
	for {
		got := g.metric(name)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			g.t.Errorf("%s = %q, want %q", name, got, want)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tokenOf(t *testing.T, pl push.Payload, action string) string {
	t.Helper()
	for _, a := range pl.Actions {
		if a.Action == action {
			return a.Token
		}
	}
	t.Fatalf("no %s action in %+v", action, pl)
	return ""
}

func secretArgs(target string) map[string]any {
	b := webtest.FSWrite(target)
	b["args"] = map[string]any{"path": target, "content": "hunter2-the-secret-value"}
	return b
}
