package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/gateway"
)

// virtualAuthenticator adds a DevTools virtual CTAP2 authenticator with
// resident keys and user verification to the browser (which must have run
// once) and returns its id.
func virtualAuthenticator(t *testing.T, browser context.Context) webauthn.AuthenticatorID {
	t.Helper()
	if _, err := chromedp.Call(browser, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	res, err := chromedp.Call(browser, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2,
			Ctap2version: webauthn.Ctap2versionCtap21, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}
	return res.AuthenticatorID
}

// browserText reads the text of sel.
func browserText(t *testing.T, browser context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("browser: read %s: %v", sel, err)
	}
	return s
}

// passkeyBrowser logs in with a one-time link as user in a new headless
// Chromium with a virtual authenticator, adds a passkey named name on the
// Account page, and returns the browser and its authenticator.
func passkeyBrowser(t *testing.T, ctx context.Context, chromium string, app *gateway.App, base, user, name string) (context.Context, webauthn.AuthenticatorID) {
	t.Helper()
	browser, closeBrowser := newBrowser(ctx, chromium, t.TempDir())
	t.Cleanup(closeBrowser)
	if err := chromedp.Do(browser, chromedp.Navigate(loginLink(t, app, base, user)), chromedp.WaitVisible(chromedp.CSS("#page"))); err != nil {
		t.Fatalf("browser: log in with the link: %v", err)
	}
	auth := virtualAuthenticator(t, browser)
	err := chromedp.Do(browser,
		chromedp.Navigate(base+"/account"),
		chromedp.WaitVisible(chromedp.CSS("#passkey-add")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), name),
		chromedp.Click(chromedp.CSS("#passkey-add")),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if err != nil {
		t.Fatalf("browser: add a passkey: %v", err)
	}
	if flash := browserText(t, browser, "#flash"); !strings.Contains(flash, name) {
		t.Fatalf("after Add a passkey the page says %q (passkey error: %q)", flash, pageText(t, browser))
	}
	return browser, auth
}

// pageText is the whole page's text, for failure messages.
func pageText(t *testing.T, browser context.Context) string {
	s, _ := chromedp.Run(browser, chromedp.Text(chromedp.CSS("main")))
	return s
}

// TestWebBrowser_PasskeyAccountAndLogin: a person logged in with the
// one-time link adds a passkey on the Account page (the button starts the
// ceremony at once), signs out, and signs in again with the passkey alone
// (no user name typed); the passkey is listed with Remove, and once removed
// it signs nobody in.
func TestWebBrowser_PasskeyAccountAndLogin(t *testing.T) {
	chromium := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	app := newWebApp(t, nil)
	base := serveWeb(t, ctx, app)
	browser, _ := passkeyBrowser(t, ctx, chromium, app, base, "owner", "iPhone")

	if list := browserText(t, browser, "#passkeys"); !strings.Contains(list, "iPhone") || !strings.Contains(list, "Remove") {
		t.Errorf("the Account page lists %q, want the passkey iPhone with Remove", list)
	}
	if b := browserText(t, browser, "#passkey-add"); b != "Add a passkey" {
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
	if b := browserText(t, browser, "#passkey-login"); b != "Sign in with a passkey" {
		t.Errorf("the login button says %q", b)
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS("#passkey-login")),
		chromedp.WaitVisible(chromedp.CSS("#page")),
		chromedp.Navigate(base+"/account"),
		chromedp.WaitVisible(chromedp.CSS("#account-user")),
	)
	if err != nil {
		t.Fatalf("browser: sign in with the passkey: %v (page: %q)", err, pageText(t, browser))
	}
	if u := browserText(t, browser, "#account-user"); u != "owner" {
		t.Errorf("signed in as %q, want owner", u)
	}
	if used := browserText(t, browser, "#passkeys"); !strings.Contains(used, "last used") {
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
		t.Fatalf("browser: remove the passkey and sign in with it: %v (page: %q)", err, pageText(t, browser))
	}
	if msg := browserText(t, browser, ".login .flash.err"); !strings.Contains(msg, "did not sign you in") {
		t.Errorf("a removed passkey's sign-in says %q", msg)
	}
}
