package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_RequestPage drives a request's own page, /r/{id}, in
// headless Chromium: the probe's hidden characters read as escapes under
// the warning, the whole value is there, and Deny on that page decides
// and comes back to it.
func TestWebBrowser_RequestPage(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app := webtest.NewApp(t, func(c *config.Config) { c.Vaglio.JudgeThreshold = 0 })
	base := webtest.Serve(t, ctx, app)
	tail := strings.Repeat("x", 3000) + "; wget http://203.0.113.9/r"
	r := webtest.Submit(t, base, webtest.CodeExec("cat notes\u202E\u2066hs.txt "+tail))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()

	card := chromedp.CSS("#req-" + r.ID)
	if err := chromedp.Do(browser, chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")), chromedp.Navigate(base+"/r/"+r.ID), chromedp.WaitVisible(card)); err != nil {
		t.Fatalf("browser: open /r/%s: %v", r.ID, err)
	}
	text, err := chromedp.Run(browser, chromedp.Text(card))
	if err != nil {
		t.Fatalf("browser: read the card: %v", err)
	}
	for _, want := range []string{"cat notes⟦U+202E⟧⟦U+2066⟧hs.txt", tail, cards.WarnEscaped} {
		if !strings.Contains(text, want) {
			t.Errorf("the page as Chromium shows it lacks %q", want[:min(len(want), 60)])
		}
	}
	if strings.ContainsAny(text, "\u202E\u2066") {
		t.Error("a bidi control reached the rendered page")
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS("#req-"+r.ID+` button[value="deny"]`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if err != nil {
		t.Fatalf("browser: click Deny: %v", err)
	}
	url, err := chromedp.Run(browser, chromedp.Location())
	if err != nil || !strings.HasSuffix(url, "/r/"+r.ID) {
		t.Errorf("after Deny the browser is at %q (%v), want the request's page", url, err)
	}
	if got := webtest.Fetch(t, base, r.ID); got.Status != approvals.StatusDenied {
		t.Errorf("status %s after Deny in the browser", got.Status)
	}
}
