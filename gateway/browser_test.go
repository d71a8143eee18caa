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

// TestWebBrowser_AllowOnce drives the page in a real headless Chromium: a
// pending request posted through the API shows up, a click on Allow once
// resolves it, and the agent's API sees allow_once.
func TestWebBrowser_AllowOnce(t *testing.T) {
	chromium := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	app := newWebApp(t, nil)
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
	base := "http://" + ln.Addr().String()
	r := apiRequest(t, base, fsWrite("/home/u/invoices/04.pdf"))

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(412, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	card := chromedp.CSS("#req-" + r.ID)
	err = chromedp.Do(browser,
		chromedp.Navigate(base+"/"),
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
	if !strings.Contains(before, "/home/u/invoices/04.pdf") {
		t.Errorf("card text lacks the target: %q", before)
	}
	if !strings.Contains(flash, "Allowed once by owner") {
		t.Errorf("flash = %q, want it to say Allowed once by owner", flash)
	}

	// The page refreshes itself when something changes: a new request shows
	// up without a tap (within one ~10 s check once the page is idle).
	r2 := apiRequest(t, base, codeExec("git status"))
	appear, cancelAppear := context.WithTimeout(browser, 30*time.Second)
	defer cancelAppear()
	if err := chromedp.Do(appear, chromedp.WaitVisible(chromedp.CSS("#req-"+r2.ID))); err != nil {
		t.Errorf("browser: a new request did not appear by itself: %v", err)
	}

	got := apiGet(t, base, r.ID)
	if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowOnce {
		t.Fatalf("API says status %s decision %v, want allowed / allow_once", got.Status, got.Decision)
	}
	if got.DecidedBy != "web:owner (local)" {
		t.Errorf("decided_by = %q, want web:owner (local)", got.DecidedBy)
	}
}
