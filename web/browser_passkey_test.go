package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_PasskeyAccountAndLogin: a person logged in with the
// one-time link adds a passkey on the Account page (the button starts the
// ceremony at once), signs out, and signs in again with the passkey alone
// (no user name typed); the passkey is listed with Remove, and once removed
// it signs nobody in.
func TestWebBrowser_PasskeyAccountAndLogin(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	app := webtest.NewApp(t, nil)
	base := webtest.Serve(t, ctx, app)
	browser, _ := webtest.PasskeyBrowser(t, ctx, chromium, app, base, "owner", "iPhone")

	if list := webtest.BrowserText(t, browser, "#passkeys"); !strings.Contains(list, "iPhone") || !strings.Contains(list, "Remove") {
		t.Errorf("the Account page lists %q, want the passkey iPhone with Remove", list)
	}
	if b := webtest.BrowserText(t, browser, "#passkey-add"); b != "Add a passkey" {
		t.Errorf("the add button says %q", b)
	}
	// Sign out, then in with the passkey.
	err := chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#passkey-login")),
	)
	if err != nil {
		t.Fatalf("browser: sign out: %v", err)
	}
	if b := webtest.BrowserText(t, browser, "#passkey-login"); b != "Sign in with a passkey" {
		t.Errorf("the login button says %q", b)
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS("#passkey-login")),
		chromedp.WaitVisible(chromedp.CSS("#page")),
		chromedp.Navigate(base+"/account"),
		chromedp.WaitVisible(chromedp.CSS("#account-user")),
	)
	if err != nil {
		t.Fatalf("browser: sign in with the passkey: %v (page: %q)", err, webtest.PageText(t, browser))
	}
	if u := webtest.BrowserText(t, browser, "#account-user"); u != "owner" {
		t.Errorf("signed in as %q, want owner", u)
	}
	if used := webtest.BrowserText(t, browser, "#passkeys"); !strings.Contains(used, "last used") {
		t.Errorf("the passkey's last use is not shown: %q", used)
	}

	// Removed, it signs nobody in.
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`#passkeys form[action="/web/passkeys/remove"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)),
		chromedp.WaitVisible(chromedp.CSS("#passkey-login")),
		chromedp.Click(chromedp.CSS("#passkey-login")),
		chromedp.WaitVisible(chromedp.CSS(".login .flash.err")),
	)
	if err != nil {
		t.Fatalf("browser: remove the passkey and sign in with it: %v (page: %q)", err, webtest.PageText(t, browser))
	}
	if msg := webtest.BrowserText(t, browser, ".login .flash.err"); !strings.Contains(msg, "did not sign you in") {
		t.Errorf("a removed passkey's sign-in says %q", msg)
	}
}
