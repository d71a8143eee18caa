package webtest

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/metnos/gateway/gateway"
)

// VirtualAuthenticator adds a DevTools virtual CTAP2 authenticator with
// resident keys and user verification to the browser (which must have run
// once) and returns its id.
func VirtualAuthenticator(t *testing.T, browser context.Context) webauthn.AuthenticatorID {
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

// BrowserText reads the text of sel.
func BrowserText(t *testing.T, browser context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("browser: read %s: %v", sel, err)
	}
	return s
}

// PasskeyBrowser logs in with a one-time link as user in a new headless
// Chromium with a virtual authenticator, adds a passkey named name on the
// Account page, and returns the browser and its authenticator.
func PasskeyBrowser(t *testing.T, ctx context.Context, chromium string, app *gateway.App, base, user, name string) (context.Context, webauthn.AuthenticatorID) {
	t.Helper()
	browser, closeBrowser := NewBrowser(ctx, chromium, t.TempDir())
	t.Cleanup(closeBrowser)
	if err := chromedp.Do(browser, chromedp.Navigate(LoginLink(t, app, base, user)), chromedp.WaitVisible(chromedp.CSS("#page"))); err != nil {
		t.Fatalf("browser: log in with the link: %v", err)
	}
	auth := VirtualAuthenticator(t, browser)
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
	if flash := BrowserText(t, browser, "#flash"); !strings.Contains(flash, name) {
		t.Fatalf("after Add a passkey the page says %q (passkey error: %q)", flash, PageText(t, browser))
	}
	return browser, auth
}

// PageText is the whole page's text, for failure messages.
func PageText(t *testing.T, browser context.Context) string {
	s, _ := chromedp.Run(browser, chromedp.Text(chromedp.CSS("main")))
	return s
}
