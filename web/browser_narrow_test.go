package web_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/web/webtest"
)

// narrowWidth is the narrowest phone the page is made for, in CSS pixels.
const narrowWidth = 360

// TestWebBrowser_FitsNarrowPhone measures the main pages in headless
// Chromium at 360 px wide (a phone's viewport, as a phone sets it): none is
// wider than the viewport (document scrollWidth), so nothing scrolls
// sideways: the page with its header (Log out), pending cards with a scope
// list and a long target, the grants; History with its filters; a
// request's own page; the account page; the login page.
func TestWebBrowser_FitsNarrowPhone(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	app := webtest.NewApp(t, nil)
	base := webtest.Serve(t, ctx, app)
	long := "/home/u/" + strings.Repeat("a-rather-long-directory-name/", 4) + "quarterly-invoice-2026-04.pdf"
	withGrant := webtest.FSWrite("/home/u/invoices/04.pdf")
	withGrant["grant_target"] = "/home/u/invoices/*.pdf"
	r := webtest.Submit(t, base, withGrant)
	webtest.Submit(t, base, webtest.FSWrite(long))
	webtest.Submit(t, base, webtest.CodeExec("git log --oneline --graph --decorate --all -- "+strings.Repeat("x", 80)))
	decided := webtest.Submit(t, base, webtest.FSWrite("/home/u/notes/"+strings.Repeat("n", 60)+".md"))
	if _, err := app.Service.DecideChoice(ctx, decided.ID, approvals.Choice{Decision: approvals.AllowAlways},
		approvals.Actor{Channel: "web", ID: "owner", Name: "owner"}); err != nil {
		t.Fatal(err)
	}

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	if err := chromedp.Do(browser, chromedp.EmulateViewport(narrowWidth, 780, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatalf("browser: a %d px viewport: %v", narrowWidth, err)
	}
	measure := func(name string) {
		t.Helper()
		got, err := chromedp.Run(browser, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, document.documentElement.clientWidth]`))
		if err != nil || len(got) != 2 {
			t.Fatalf("browser: measure %s: %v %v", name, got, err)
		}
		if got[0] > narrowWidth || got[1] > narrowWidth {
			wide, _ := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")].
				filter(e => e.getBoundingClientRect().right > `+strconv.Itoa(narrowWidth)+` + 0.5).
				map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "") +
					" right=" + Math.round(e.getBoundingClientRect().right))`))
			t.Errorf("%s scrolls sideways at %d px: %d px wide (viewport %d); wider than the viewport: %q", name, narrowWidth, got[0], got[1], wide)
		}
	}
	if err := chromedp.Do(browser, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
		t.Fatalf("browser: open the login page: %v", err)
	}
	measure("the login page")
	if err := chromedp.Do(browser, chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")),
		chromedp.WaitVisible(chromedp.CSS("#req-"+r.ID))); err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}
	measure("the page")
	for _, p := range []struct{ name, path, ready string }{
		{"History", "/history", "#history-filter"},
		{"a request's page", "/requests/" + r.ID, "#req-" + r.ID},
		{"the account page", "/account", "main"},
	} {
		if err := chromedp.Do(browser, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.ready))); err != nil {
			t.Fatalf("browser: open %s: %v", p.name, err)
		}
		measure(p.name)
	}
}
