package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/web/push"
	"github.com/metnos/gateway/web/webtest"
)

// shownNotification is what registration.getNotifications() gives back.
type shownNotification struct {
	Title   string   `json:"title"`
	Tag     string   `json:"tag"`
	Body    string   `json:"body"`
	Actions []string `json:"actions"`
}

// pushBrowser is headless Chromium logged in to g as user, with
// notifications granted, on the page once the service worker is active.
type pushBrowser struct {
	t       *testing.T
	g       *pushGW
	ctx     context.Context
	regID   serviceworker.RegistrationID
	workers context.Context // the service worker's target
}

func newPushBrowser(t *testing.T, ctx context.Context, chromium string, g *pushGW, user string) *pushBrowser {
	t.Helper()
	b, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	t.Cleanup(closeBrowser)
	regs := make(chan serviceworker.RegistrationID, 8)
	if err := chromedp.Do(b, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browser: start: %v", err)
	}
	_ = chromedp.Listen(b, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if r.ScopeURL == g.base+"/" && !r.IsDeleted {
					select {
					case regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	})
	if _, err := chromedp.CallBrowser(b, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted,
		Origin: g.base}); err != nil {
		t.Fatalf("browser: grant notifications: %v", err)
	}
	if _, err := chromedp.Call(b, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatalf("browser: ServiceWorker.enable: %v", err)
	}
	if err := chromedp.Do(b, chromedp.Navigate(webtest.LoginLink(t, g.app, g.base, user)), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
		t.Fatalf("browser: log in: %v", err)
	}
	state, err := chromedp.Run(b, chromedp.Evaluate[string](
		`navigator.serviceWorker.ready.then(r => r.active.state === "activated" ? "activated" :
			new Promise(ok => r.active.addEventListener("statechange", e => { if (e.target.state === "activated") ok("activated"); })))`, chromedp.EvalAwaitPromise))
	if err != nil || state != "activated" {
		t.Fatalf("service worker: %q %v", state, err)
	}
	pb := &pushBrowser{t: t, g: g, ctx: b}
	select {
	case pb.regID = <-regs:
	case <-time.After(pushWait):
		t.Fatal("no service worker registration event for the page's scope")
	}
	targets, err := chromedp.Targets(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range targets {
		if ti.Type == "service_worker" && ti.URL == g.base+"/sw.js" {
			w, cancel := chromedp.NewContext(b, chromedp.WithTargetID(ti.TargetID))
			t.Cleanup(cancel)
			pb.workers = w
		}
	}
	if pb.workers == nil {
		t.Fatalf("no service worker target among %d", len(targets))
	}
	return pb
}

// deliver hands payload to the service worker as its push service would
// (ServiceWorker.deliverPushMessage), then waits until a notification
// with the tag shows what want says.
//
// A push DevTools hands to a worker that is starting can be dropped (seen
// under -race on a loaded machine, about one run in four): it is handed
// again, up to three times. The same push twice shows one notification
// (the tag replaces it), as a push service's redelivery would.
func (pb *pushBrowser) deliver(payload []byte, tag string, want func(shownNotification) bool) shownNotification {
	pb.t.Helper()
	var ns []shownNotification
	for range 3 {
		if _, err := chromedp.Call(pb.ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
			Origin: pb.g.base, RegistrationID: pb.regID, Data: string(payload)}); err != nil {
			pb.t.Fatalf("deliverPushMessage: %v", err)
		}
		deadline := time.Now().Add(pushWait / 3)
		for time.Now().Before(deadline) {
			ns = pb.notifications(tag)
			if len(ns) == 1 && want(ns[0]) {
				return ns[0]
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pb.t.Fatalf("notifications with tag %s: %+v", tag, ns)
	return shownNotification{}
}

func (pb *pushBrowser) notifications(tag string) []shownNotification {
	pb.t.Helper()
	js, err := chromedp.Run(pb.ctx, chromedp.Evaluate[string](`navigator.serviceWorker.ready
		.then(r => r.getNotifications({tag: `+jsString(tag)+`}))
		.then(ns => JSON.stringify(ns.map(n => ({title: n.title, tag: n.tag, body: n.body, actions: (n.actions || []).map(a => a.action)}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		pb.t.Fatalf("getNotifications: %v", err)
	}
	var ns []shownNotification
	_ = json.Unmarshal([]byte(js), &ns)
	return ns
}

// click runs the worker's notificationclick on the shown notification
// with action (its own act function: DevTools cannot press a button of
// the system's notification) and waits for its work to finish.
func (pb *pushBrowser) click(tag, action string) {
	pb.t.Helper()
	_, err := chromedp.Run(pb.workers, chromedp.Evaluate[bool](`self.registration.getNotifications({tag: `+jsString(tag)+`})
		.then(ns => act(ns[0], `+jsString(action)+`)).then(() => true, () => true)`, chromedp.EvalAwaitPromise))
	if err != nil {
		pb.t.Fatalf("notification click %s: %v", action, err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWebBrowser_PushNotification: the page is installable (the manifest
// is valid and the service worker installs); a push delivered through
// DevTools shows the request's title, its tag and the two actions; Allow
// once on it decides as the user (the agent sees allow_once, decided_by
// web:anna), and the outcome replaces the notification. A replayed token,
// an expired one and one whose request was decided meanwhile decide
// nothing.
func TestWebBrowser_PushNotification(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	clock := testclock.New(time.Now())
	g := newPushGW(t, clock, nil)
	dev := g.subscribe(g.user("anna"), "Chrome · Linux")
	pb := newPushBrowser(t, ctx, chromium, g, "anna")

	m, err := chromedp.Call(pb.ctx, page.GetAppManifest, page.GetAppManifestParams{})
	if err != nil {
		t.Fatalf("Page.getAppManifest: %v", err)
	}
	if len(m.Errors) != 0 || m.URL != g.base+"/manifest.webmanifest" {
		t.Fatalf("manifest %s: errors %+v", m.URL, m.Errors)
	}
	var man struct {
		Display, StartURL string
		Icons             []struct{ Sizes string }
	}
	if err := json.Unmarshal([]byte(m.Data), &man); err != nil || man.Display != "standalone" || len(man.Icons) < 2 {
		t.Fatalf("manifest: %s (%v)", m.Data, err)
	}
	for _, p := range []string{"/icons/icon-192.png", "/icons/icon-512.png", "/icons/icon-180.png"} {
		if status, body := webtest.GetPath(t, http.DefaultClient, g.base+p); status != http.StatusOK || !strings.HasPrefix(body, "\x89PNG") {
			t.Errorf("%s: %d", p, status)
		}
	}

	r := g.ask(webtest.FSWrite("/home/anna/inv/04.pdf"))
	p := g.fake.Next(t, pushWait)
	if p.Device != dev.ID {
		t.Fatalf("push to %s", p.Device)
	}
	n := pb.deliver(p.Payload, r.ID, func(n shownNotification) bool { return true })
	if n.Title != "a1 wants fs:write" || n.Tag != r.ID || !strings.Contains(n.Body, "/home/anna/inv/04.pdf") ||
		strings.Join(n.Actions, ",") != "allow_once,deny" {
		t.Fatalf("notification: %+v", n)
	}
	pb.click(r.ID, "allow_once")
	got := webtest.Fetch(t, g.base, r.ID)
	if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowOnce || got.DecidedBy != "web:anna" {
		t.Fatalf("after Allow once on the notification: %s %v by %q", got.Status, got.Decision, got.DecidedBy)
	}
	if ns := pb.notifications(r.ID); len(ns) != 1 || !strings.Contains(ns[0].Body, "Allowed once by anna") || len(ns[0].Actions) != 0 {
		t.Fatalf("notification after the action: %+v", ns)
	}
	upd := g.fake.Next(t, pushWait) // the outcome's push, as the device gets it
	pb.deliver(upd.Payload, r.ID, func(n shownNotification) bool { return strings.Contains(n.Body, "Allowed once by anna") })

	// Replayed: the same push again, its Deny (spent with Allow once).
	pb.deliver(p.Payload, r.ID, func(n shownNotification) bool { return len(n.Actions) == 2 })
	pb.click(r.ID, "deny")
	if again := webtest.Fetch(t, g.base, r.ID); again.Status != approvals.StatusAllowed || *again.Decision != approvals.AllowOnce {
		t.Fatalf("a replayed token changed the request: %s %v", again.Status, again.Decision)
	}

	// Decided meanwhile: denied through the admin-free page as bob.
	r2 := g.ask(webtest.FSWrite("/home/anna/inv/05.pdf"))
	p2 := g.fake.Next(t, pushWait)
	bob := g.user("bob")
	page2 := webtest.Page(t, bob, g.base)
	if status, _ := webtest.PostForm(t, bob, g.base+"/web/decide", webtest.Form("csrf", webtest.CSRF(t, page2), "id", r2.ID, "decision", "deny"), nil); status != http.StatusOK {
		t.Fatal("bob's deny")
	}
	g.fake.Next(t, pushWait) // its outcome's push
	pb.deliver(p2.Payload, r2.ID, func(n shownNotification) bool { return len(n.Actions) == 2 })
	pb.click(r2.ID, "allow_once")
	if got := webtest.Fetch(t, g.base, r2.ID); got.Status != approvals.StatusDenied || got.DecidedBy != "web:bob" {
		t.Fatalf("a token for a request decided meanwhile: %s by %s", got.Status, got.DecidedBy)
	}

	// Expired: the token's quarter of an hour has passed.
	r3 := g.ask(map[string]any{"capability": "fs:write", "target": "/home/anna/inv/06.pdf", "intent": "save",
		"executor": "saver", "timeout_s": 3600})
	p3 := g.fake.Next(t, pushWait)
	pb.deliver(p3.Payload, r3.ID, func(n shownNotification) bool { return len(n.Actions) == 2 })
	clock.Add(push.ActionTTL + time.Second)
	pb.click(r3.ID, "allow_once")
	if got := webtest.Fetch(t, g.base, r3.ID); got.Status != approvals.StatusPending {
		t.Fatalf("an expired token decided: %s", got.Status)
	}
}
