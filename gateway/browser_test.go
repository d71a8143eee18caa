package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// findChromium returns a headless-capable browser binary, or fails the
// test in CI (which must have one: .ci/run installs it) and skips it on a
// developer machine without one.
func findChromium(t *testing.T) string {
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

// serveWeb serves app on a loopback port until the test ends (or ctx does)
// and returns its base URL; a failed Serve fails the test.
func serveWeb(t *testing.T, ctx context.Context, app *gateway.App) string {
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

// newBrowser starts headless Chromium in a phone-sized window with its
// profile in dir, and the function that ends it.
func newBrowser(ctx context.Context, chromium, dir string) (context.Context, func()) {
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

// TestWebBrowser_AllowOnce drives the page in a real headless Chromium,
// once in each language of web.language: a pending request posted through
// the API shows up (in the page's language, its expiry in server.timezone),
// a click on Allow once resolves it, and the agent's API sees allow_once.
func TestWebBrowser_AllowOnce(t *testing.T) {
	chromium := findChromium(t)
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

	app := newWebApp(t, func(c *config.Config) { c.Web.Language = lang })
	base := serveWeb(t, ctx, app)
	r := apiRequest(t, base, fsWrite("/home/u/invoices/04.pdf"))

	browser, closeBrowser := newBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()

	card := chromedp.CSS("#req-" + r.ID)
	link := loginLink(t, app, base, "owner")
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
	r2 := apiRequest(t, base, codeExec("git status"))
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

	got := apiGet(t, base, r.ID)
	if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowOnce {
		t.Fatalf("API says status %s decision %v, want allowed / allow_once", got.Status, got.Decision)
	}
	if got.DecidedBy != "web:owner" {
		t.Errorf("decided_by = %q, want web:owner", got.DecidedBy)
	}
}
