package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_PasskeyNeedsFreshSession: in Chromium with a virtual
// authenticator, a session opened with a login link adds a passkey; the
// same session more than web.PasskeyProofFresh later cannot add
// another (the page says why, nothing is stored); a new login link makes
// it fresh again.
func TestWebBrowser_PasskeyNeedsFreshSession(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	clock := testclock.New(time.Now())
	app := webtest.NewAppAt(t, clock.Now, nil)
	base := webtest.Serve(t, ctx, app)
	browser, _ := webtest.PasskeyBrowser(t, ctx, chromium, app, base, "owner", "iPhone")

	clock.Add(web.PasskeyProofFresh + time.Second)
	err := chromedp.Do(browser,
		chromedp.Navigate(base+"/account"),
		chromedp.WaitVisible(chromedp.CSS("#passkey-add")),
		chromedp.SendKeys(chromedp.CSS("#passkey-name"), "Stale"),
		chromedp.Click(chromedp.CSS("#passkey-add")),
		chromedp.WaitVisible(chromedp.CSS("#passkey-error")),
	)
	if err != nil {
		t.Fatalf("browser: add a passkey from a stale session: %v (page %q)", err, webtest.PageText(t, browser))
	}
	if msg := webtest.BrowserText(t, browser, "#passkey-error"); !strings.Contains(msg, "needs a fresh sign-in") {
		t.Errorf("the page says %q", msg)
	}
	if keys, err := passkeys.New(app.Service.DB(), nil).List(ctx, "owner"); err != nil || len(keys) != 1 {
		t.Fatalf("passkeys after the stale attempt: %v %+v", err, keys)
	}
}

// TestPasskeys_AddAuditedAndFresh: adding a passkey takes a session
// started by a login link (or a passkey) within PasskeyProofFresh, checked
// when the ceremony begins and again (allowing the ceremony's own minutes)
// when it ends; each add and remove is an audit row saying who and how.
func TestPasskeys_AddAuditedAndFresh(t *testing.T) {
	clock := testclock.New(time.Now())
	app := webtest.NewAppAt(t, clock.Now, nil)
	srv, _ := webtest.Server(t, app)
	ctx := context.Background()
	w := passkeystest.Login(t, srv.URL, webtest.LoginLink(t, app, srv.URL, "owner"))
	phone := &passkeystest.Authenticator{Origin: srv.URL}
	w.Register(phone, "iPhone")

	// Begun while fresh, answered too late.
	st, body := w.Post("/web/passkeys/begin", url.Values{})
	var b passkeystest.Begun
	if err := json.Unmarshal([]byte(body), &b); err != nil || st != http.StatusOK {
		t.Fatalf("begin: %d %s", st, body)
	}
	laptop := &passkeystest.Authenticator{Origin: srv.URL}
	cred, err := laptop.Create(b)
	if err != nil {
		t.Fatal(err)
	}
	clock.Add(web.PasskeyProofFresh + passkeys.CeremonyTTL + time.Second)
	if _, page := w.Post("/web/passkeys/add", url.Values{"ceremony": {b.Ceremony}, "credential": {cred}, "name": {"Late"}}); !strings.Contains(page, "needs a fresh sign-in") {
		t.Errorf("adding from a session gone stale during the ceremony:\n%s", page)
	}
	// Begun stale.
	if st, body := w.Post("/web/passkeys/begin", url.Values{}); st != http.StatusForbidden || !strings.Contains(body, "needs a fresh sign-in") {
		t.Errorf("begin from a stale session: %d %s", st, body)
	}
	keys := passkeys.New(app.Service.DB(), nil)
	if list, _ := keys.List(ctx, "owner"); len(list) != 1 {
		t.Fatalf("passkeys: %+v", list)
	}
	// A new link: fresh again.
	w = passkeystest.Login(t, srv.URL, webtest.LoginLink(t, app, srv.URL, "owner"))
	w.Register(laptop, "MacBook")
	list, _ := keys.List(ctx, "owner")
	if len(list) != 2 {
		t.Fatalf("passkeys: %+v", list)
	}
	if st, page := w.Post("/web/passkeys/remove", url.Values{"id": {strconv.FormatInt(list[0].ID, 10)}}); st != http.StatusOK || !strings.Contains(page, "iPhone") {
		t.Fatalf("remove: %d\n%s", st, page)
	}
	// Every user of the page is told.
	other := webtest.BrowserClient(t)
	webtest.Login(t, app, other, srv.URL, "owner")
	if _, page := webtest.GetPath(t, other, srv.URL+"/"); !strings.Contains(page, `id="passkey-notices"`) ||
		!strings.Contains(page, "Passkey “MacBook” was added for owner") || !strings.Contains(page, "Passkey “iPhone” of owner was removed") {
		t.Errorf("the page does not tell of the passkey changes:\n%s", page)
	}
	rows, err := storage.ListAudit(ctx, app.Service.DB(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rows {
		if r.Event == storage.AuditPasskeyAdded || r.Event == storage.AuditPasskeyRemoved {
			got = append(got, r.Event+" "+r.Actor+" "+r.Detail["passkey"].(string)+" "+r.Detail["how"].(string))
		}
	}
	want := []string{"passkey_added web:owner iPhone login link", "passkey_added web:owner MacBook login link",
		"passkey_removed web:owner iPhone removed"}
	slices.Reverse(got) // ListAudit is newest first
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("passkey audit rows:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
