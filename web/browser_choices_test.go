package web_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web/webtest"
)

// acceptDialogs accepts every confirm dialog the page opens, as a person
// pressing OK, and returns what the dialogs said so far.
func acceptDialogs(t *testing.T, browser context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var said []string
	dialogs := chromedp.Events(browser, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			mu.Lock()
			said = append(said, ev.Message)
			mu.Unlock()
			if _, err := chromedp.Call(browser, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true}); err != nil {
				return
			}
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), said...)
	}
}

// TestWebBrowser_ScopeChoice drives the card's Allow always in headless
// Chromium: the scope chosen under the button is named in the confirm
// dialog and is the grant's target; a scope the request does not offer
// (an option forged into the select) is refused and decides nothing; cards
// of code:exec and mail:send have no Allow for and no Allow this session
// button, a per_target card with a session has both.
func TestWebBrowser_ScopeChoice(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	app := webtest.NewApp(t, func(cfg *config.Config) { cfg.Approvals.AllowFor = []config.Duration{config.Duration(2 * time.Second)} })
	base := webtest.Serve(t, ctx, app)
	r := webtest.Submit(t, base, webtest.FSWrite("/srv/docs/x.md"))
	forged := webtest.Submit(t, base, webtest.FSWrite("/srv/other/y.md"))
	withSession := func(body map[string]any) map[string]any { body["session_id"] = "s-1"; return body }
	exec := webtest.Submit(t, base, withSession(webtest.CodeExec("npm test")))
	mail := webtest.Submit(t, base, withSession(map[string]any{"capability": "mail:send", "target": "boss@example.com",
		"intent": "send the report", "executor": "mailer"}))
	session := webtest.Submit(t, base, withSession(webtest.FSWrite("/srv/notes/n.md")))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	dialogs := acceptDialogs(t, browser)
	card := func(id string) string { return "#req-" + id }
	if err := chromedp.Do(browser, chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")),
		chromedp.WaitVisible(chromedp.CSS(card(r.ID)))); err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}

	// Which decisions each card offers.
	buttons := func(id string) []string {
		t.Helper()
		v, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll("`+card(id)+
			` button[name=button]")].map(b => b.value)`))
		if err != nil {
			t.Fatalf("browser: buttons of %s: %v", id, err)
		}
		return v
	}
	for _, c := range []struct {
		name string
		id   string
	}{{"code:exec", exec.ID}, {"mail:send", mail.ID}} {
		if got := strings.Join(buttons(c.id), ","); got != "allow_once,deny" {
			t.Errorf("%s card buttons %q, want allow_once,deny", c.name, got)
		}
	}
	if got := strings.Join(buttons(session.ID), ","); !strings.Contains(got, "allow_for") || !strings.Contains(got, "allow_session") {
		t.Errorf("fs:write card with a session: buttons %q, want allow_for and allow_session", got)
	}

	// Choose /srv/docs/* (the third scope) and press Allow always.
	always := card(r.ID) + ` form:has(button[value="allow_always"])`
	if err := chromedp.Do(browser,
		chromedp.SetValue(chromedp.CSS(always+" select[name=scope_index]"), "2"),
		chromedp.Click(chromedp.CSS(always+" button")),
		chromedp.WaitNotPresent(chromedp.CSS(card(r.ID))),
	); err != nil {
		t.Fatalf("browser: allow always with a scope: %v", err)
	}
	got := webtest.Fetch(t, base, r.ID)
	if got.Status != approvals.StatusAllowed || got.GrantID == nil {
		t.Fatalf("after Allow always: %s %v", got.Status, got.GrantID)
	}
	if g, err := app.Grants.Get(ctx, *got.GrantID); err != nil || g.Target != "/srv/docs/*" {
		t.Fatalf("grant %+v, %v; want the chosen /srv/docs/*", g, err)
	}
	if d := dialogs(); len(d) != 1 || !strings.Contains(d[0], "/srv/docs/*") {
		t.Errorf("confirm dialogs %q, want one naming /srv/docs/*", d)
	}

	// A forged option (index 7: the request lists three scopes) is refused.
	fa := card(forged.ID) + ` form:has(button[value="allow_always"])`
	if err := chromedp.Do(browser,
		chromedp.WaitVisible(chromedp.CSS(fa+" select[name=scope_index]")),
		chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('`+fa+` select[name=scope_index]');
			const o = document.createElement("option"); o.value = "7"; o.textContent = "/"; s.append(o); s.value = "7"; })()`),
		// Marks this page, to wait for the one the form's answer loads.
		chromedp.Evaluate[chromedp.Void](`document.body.dataset.before = "1"`),
		chromedp.Click(chromedp.CSS(fa+" button")),
		chromedp.WaitNotPresent(chromedp.CSS("body[data-before]")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	); err != nil {
		t.Fatalf("browser: a forged scope: %v", err)
	}
	flash, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#flash")))
	if err != nil || !strings.Contains(strings.ToLower(flash), "not offered") {
		t.Errorf("flash after a forged scope %q, %v", flash, err)
	}
	if got := webtest.Fetch(t, base, forged.ID); got.Status != approvals.StatusPending || got.GrantID != nil {
		t.Fatalf("a forged scope decided: %s", got.Status)
	}
	if gs, err := app.Grants.List(ctx, policy.GrantFilter{All: true}); err != nil || len(gs) != 1 {
		t.Fatalf("grants %+v, %v; want only the chosen one", gs, err)
	}
}

// TestWebBrowser_AllowForAndSession drives "Allow for 2 s" and "Allow this
// session" on the page in headless Chromium: the first writes a grant on
// the request's target ending 2 s after the click, which answers the same
// request at once until the gateway's clock passes it (moved, not waited
// for); the second a grant for the agent and session only: the same
// session is answered at once, a second session is asked again.
func TestWebBrowser_AllowForAndSession(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	app := webtest.NewAppAt(t, now, func(cfg *config.Config) { cfg.Approvals.AllowFor = []config.Duration{config.Duration(2 * time.Second)} })
	base := webtest.Serve(t, ctx, app)
	inSession := func(target, session string) map[string]any {
		b := webtest.FSWrite(target)
		b["session_id"] = session
		return b
	}
	while := webtest.Submit(t, base, webtest.FSWrite("/srv/logs/app.log"))
	sess := webtest.Submit(t, base, inSession("/srv/notes/n.md", "s-1"))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	click := func(id string, decision approvals.Decision) {
		t.Helper()
		if err := chromedp.Do(browser,
			chromedp.Click(chromedp.CSS("#req-"+id+` button[value="`+string(decision)+`"]`)),
			chromedp.WaitNotPresent(chromedp.CSS("#req-"+id)),
		); err != nil {
			t.Fatalf("browser: %s: %v", decision, err)
		}
	}
	grantOf := func(id string) policy.Grant {
		t.Helper()
		r := webtest.Fetch(t, base, id)
		if r.Status != approvals.StatusAllowed || r.GrantID == nil {
			t.Fatalf("%s after the click: %s, grant %v", id, r.Status, r.GrantID)
		}
		g, err := app.Grants.Get(ctx, *r.GrantID)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if err := chromedp.Do(browser, chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")),
		chromedp.WaitVisible(chromedp.CSS("#req-"+sess.ID))); err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}

	click(while.ID, approvals.AllowFor)
	if g := grantOf(while.ID); g.Target != "/srv/logs/app.log" || g.ExpiresAt == nil || g.ExpiresAt.Sub(g.GrantedAt) != 2*time.Second {
		t.Fatalf("Allow for 2 s wrote %+v", g)
	}
	if r := apiSubmit(t, base, webtest.FSWrite("/srv/logs/app.log")); r.Status != approvals.StatusAllowed {
		t.Fatalf("within the while: %s", r.Status)
	}
	offset.Add(int64(2 * time.Second))
	if r := apiSubmit(t, base, webtest.FSWrite("/srv/logs/app.log")); r.Status != approvals.StatusPending {
		t.Fatalf("after the while: %s, want asked again", r.Status)
	}

	click(sess.ID, approvals.AllowSession)
	if g := grantOf(sess.ID); g.Agent != "a1" || g.SessionID != "s-1" || g.Target != "/srv/notes/n.md" {
		t.Fatalf("Allow this session wrote %+v", g)
	}
	if r := apiSubmit(t, base, inSession("/srv/notes/n.md", "s-1")); r.Status != approvals.StatusAllowed {
		t.Fatalf("the same session: %s", r.Status)
	}
	if r := apiSubmit(t, base, inSession("/srv/notes/n.md", "s-2")); r.Status != approvals.StatusPending {
		t.Fatalf("a second session: %s, want asked again", r.Status)
	}
}
