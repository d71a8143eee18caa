package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_AllowOnce drives the page in a real headless Chromium,
// once in each language of web.language: a pending request posted through
// the API shows up (in the page's language, its expiry in server.timezone),
// a click on Allow once resolves it, and the agent's API sees allow_once.
func TestWebBrowser_AllowOnce(t *testing.T) {
	chromium := webtest.Chromium(t)
	for _, tc := range []struct {
		lang                         string
		button, flash, expires, html string
	}{
		{"en", "✅ Allow once", "✅ Allowed once by owner", "in 9 min, ", `lang="en"`},
		{"it", "✅ Consenti una volta", "✅ Consentita una volta da owner", "tra 9 min, ", `lang="it"`},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			browserAllowOnce(t, chromium, tc.lang, tc.button, tc.flash, tc.expires, tc.html)
		})
	}
}

func browserAllowOnce(t *testing.T, chromium, lang, button, wantFlash, expires, htmlLang string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	app := webtest.NewApp(t, func(c *config.Config) { c.Web.Language = lang })
	base := webtest.Serve(t, ctx, app)
	r := webtest.Submit(t, base, webtest.FSWrite("/home/u/invoices/04.pdf"))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()

	card := chromedp.CSS("#req-" + r.ID)
	link := webtest.LoginLink(t, app, base, "owner")
	err := chromedp.Do(browser,
		chromedp.Navigate(link), // the one-time link lands on the page
		chromedp.WaitVisible(card),
	)
	if err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}
	before, err := chromedp.Run(browser, chromedp.Text(card))
	if err != nil {
		t.Fatalf("browser: read the card: %v", err)
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS("#req-"+r.ID+` button[value="allow_once"]`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.WaitNotPresent(card),
	)
	if err != nil {
		t.Fatalf("browser: click Allow once: %v", err)
	}
	flash, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#flash")))
	if err != nil {
		t.Fatalf("browser: read the flash: %v", err)
	}
	for _, want := range []string{"/home/u/invoices/04.pdf", button, expires, " JST"} {
		if !strings.Contains(before, want) {
			t.Errorf("card text lacks %q: %q", want, before)
		}
	}
	if !strings.Contains(flash, wantFlash) {
		t.Errorf("flash = %q, want it to say %q", flash, wantFlash)
	}
	page, err := chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html")))
	if err != nil {
		t.Fatalf("browser: read the page: %v", err)
	}
	if !strings.Contains(page, htmlLang) {
		t.Errorf("page is not marked %s", htmlLang)
	}

	// The page refreshes itself when something changes: a new request shows
	// up without a tap (within one ~10 s check once the page is idle).
	r2 := webtest.Submit(t, base, webtest.CodeExec("git status"))
	appear, cancelAppear := context.WithTimeout(browser, 30*time.Second)
	defer cancelAppear()
	if err := chromedp.Do(appear, chromedp.WaitVisible(chromedp.CSS("#req-"+r2.ID))); err != nil {
		t.Errorf("browser: a new request did not appear by itself: %v", err)
	}

	// The link worked once: opened again it is refused.
	if err := chromedp.Do(browser, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(".card"))); err != nil {
		t.Fatalf("browser: open the used link: %v", err)
	}
	if used, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(".card"))); err != nil || !strings.Contains(used, "gateway login") {
		t.Errorf("the used link's page says %q (%v), want it refused", used, err)
	}

	got := webtest.Fetch(t, base, r.ID)
	if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowOnce {
		t.Fatalf("API says status %s decision %v, want allowed / allow_once", got.Status, got.Decision)
	}
	if got.DecidedBy != "web:owner" {
		t.Errorf("decided_by = %q, want web:owner", got.DecidedBy)
	}
}
