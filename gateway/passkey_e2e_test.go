package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/web/webtest"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

// captured is a step-up ceremony begun and answered in the page but not
// posted: what a replay or a forger holds.
type captured struct {
	Ceremony   string `json:"ceremony"`
	Credential string `json:"credential"`
	CSRF       string `json:"csrf"`
}

// captureAssertion begins the step-up of decision on request id from the
// page the browser shows (its card's form) and has the authenticator
// answer it, without posting the answer.
func captureAssertion(t *testing.T, browser context.Context, id, decision string) captured {
	t.Helper()
	js := `(async () => {
  const f = document.querySelector('#req-` + id + ` form[data-passkey] input[name=decision][value=` + decision + `]').form;
  const body = new URLSearchParams(new FormData(f));
  const r = await fetch("/web/decide/passkey/begin", {method: "POST", body});
  const b = await r.json();
  if (!r.ok) throw new Error(b.error);
  const cred = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(b.options.publicKey)});
  return {ceremony: b.ceremony, credential: JSON.stringify(cred.toJSON()), csrf: body.get("csrf")};
})()`
	c, err := chromedp.Run(browser, chromedp.Evaluate[captured](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: capture an assertion for %s: %v", id, err)
	}
	return c
}

// postAssertion posts a step-up answer from the page (its cookies) and
// returns the flash the page then shows.
func postAssertion(t *testing.T, browser context.Context, ceremony, credential, csrf string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"ceremony": ceremony, "credential": credential, "csrf": csrf})
	js := `(async () => {
  const a = ` + string(args) + `;
  const r = await fetch("/web/decide/passkey", {method: "POST", body: new URLSearchParams(a)});
  const doc = new DOMParser().parseFromString(await r.text(), "text/html");
  const f = doc.getElementById("flash");
  return f ? f.textContent : "";
})()`
	s, err := chromedp.Run(browser, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: post an assertion: %v", err)
	}
	return s
}

// clickOnRequestPage opens /r/{id} and clicks the button of decision,
// which runs the assertion at once, and returns the flash.
func clickOnRequestPage(t *testing.T, browser context.Context, base, id, decision string) string {
	t.Helper()
	err := chromedp.Do(browser,
		chromedp.Navigate(base+"/r/"+id),
		chromedp.WaitVisible(chromedp.CSS("#req-"+id+` button[value="`+decision+`"]`)),
		chromedp.Click(chromedp.CSS("#req-"+id+` button[value="`+decision+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#flash")),
	)
	if err != nil {
		t.Fatalf("browser: %s on /r/%s: %v (page: %q)", decision, id, err, webtest.PageText(t, browser))
	}
	return webtest.BrowserText(t, browser, "#flash")
}

func stillPending(t *testing.T, g *routesGW, id, after string) {
	t.Helper()
	if r, err := g.app.Service.Get(context.Background(), id); err != nil || r.Status != approvals.StatusPending {
		t.Fatalf("after %s request %s is %s (%v), want pending", after, id, r.Status, err)
	}
}

// TestPasskeys_TelegramStepUp: a route with step_up = "passkey". The
// Telegram card has no Allow button, shows the web page's link (as text:
// Telegram takes no localhost button) and keeps Deny; a forged Allow tap
// is answered with where to allow and decides nothing; the admin API gets
// 403 step_up_required; on /r/{id} Allow once runs the passkey assertion
// and allows. An assertion replayed for another request, a challenge used
// twice and an assertion from an authenticator nobody registered (same
// credential id, another key) are refused, and the requests stay pending.
func TestPasskeys_TelegramStepUp(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newRoutesGW(t, config.Route{Capability: "fs:write", Notify: []string{"telegram"},
		Approvers: []string{"web:owner", "telegram:42", "agent:boss"}, Quorum: 1, StepUp: config.StepUpPasskey})
	base := g.pageBase()
	browser, auth := webtest.PasskeyBrowser(t, ctx, chromium, g.app, base, "owner", "iPhone")

	answer := g.ask("fs:write", "/srv/deploy/app.tar", "60s")
	id := g.pendingID("/srv/deploy/app.tar")
	card := g.tgCard(id, nil)
	wantIn(t, "step-up card", card.Text, "passkey")
	wantIn(t, "step-up card", card.Text, base+"/r/"+id)
	if labels := strings.Join(func() (s []string) {
		for _, b := range card.Buttons() {
			s = append(s, b.Text)
		}
		return
	}(), "|"); strings.Contains(labels, "Allow") || !strings.Contains(labels, "Deny") {
		t.Errorf("step-up card buttons %q: want Deny and no Allow", labels)
	}
	// An Allow tap (forged: the card has none) names the passkey and the page.
	q := g.tg.Press(rtRoberto, card.ChatID, card.ID, cards.EncodeDecision(id, approvals.AllowOnce))
	var alert string
	g.tg.WaitUntil(t, rtWait, "the answer to the allow tap", func() bool {
		if as := g.tg.Answers(q); len(as) > 0 {
			alert = as[0].Text
			return true
		}
		return false
	})
	wantIn(t, "allow tap answer", alert, "passkey")
	wantIn(t, "allow tap answer", alert, "web page")
	stillPending(t, g, id, "an Allow tap")
	// The admin API cannot allow it.
	st, body := g.call("POST", "/v1/requests/"+id+"/decision", rtAdminToken, map[string]any{"decision": "allow_once"})
	if st != http.StatusForbidden || !strings.Contains(string(body), `"step_up_required"`) {
		t.Fatalf("admin allow: %d %s, want 403 step_up_required", st, body)
	}
	stillPending(t, g, id, "the admin API's allow")

	// On /r/{id}, Allow once with the passkey allows it.
	if flash := clickOnRequestPage(t, browser, base, id, "allow_once"); !strings.Contains(flash, "Allowed once") {
		t.Fatalf("after Allow once with the passkey the page says %q", flash)
	}
	// The request's page (its trail) says who signed, and checks it again.
	if trail := webtest.BrowserText(t, browser, "#request-trail"); !strings.Contains(trail, "Signed with the passkey “iPhone” of owner; signature verified") {
		t.Errorf("the request's trail says %q", trail)
	}
	if r := agentAnswer(t, answer); r.Status != approvals.StatusAllowed || r.DecidedBy != "web:owner" ||
		len(r.Approvals) != 1 || r.Approvals[0].Passkey != "iPhone" {
		t.Fatalf("agent got %s by %q approvals %+v, want allowed by web:owner with the passkey iPhone", r.Status, r.DecidedBy, r.Approvals)
	}
	g.tgCard(id, func(m telegramtest.Message) bool { return strings.Contains(m.Text, "Allowed once") })

	// Replays and forgeries: two more requests.
	g.ask("fs:write", "/srv/deploy/a.tar", "60s")
	g.ask("fs:write", "/srv/deploy/b.tar", "60s")
	a, b := g.pendingID("/srv/deploy/a.tar"), g.pendingID("/srv/deploy/b.tar")
	if err := chromedp.Do(browser, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#req-"+b))); err != nil {
		t.Fatal(err)
	}
	ca := captureAssertion(t, browser, a, "allow_once")
	cb := captureAssertion(t, browser, b, "allow_once")
	// a's assertion answering b's challenge.
	if flash := postAssertion(t, browser, cb.Ceremony, ca.Credential, cb.CSRF); !strings.Contains(flash, "Passkey refused") {
		t.Errorf("a's assertion for b: the page says %q", flash)
	}
	stillPending(t, g, b, "a's assertion for b")
	stillPending(t, g, a, "a's assertion for b")
	// b's challenge was spent by that attempt: its own assertion is refused now.
	if flash := postAssertion(t, browser, cb.Ceremony, cb.Credential, cb.CSRF); !strings.Contains(flash, "already used") {
		t.Errorf("b's challenge used twice: the page says %q", flash)
	}
	stillPending(t, g, b, "a reused challenge")
	// a's own, once: allowed; the same again: refused.
	if flash := postAssertion(t, browser, ca.Ceremony, ca.Credential, ca.CSRF); !strings.Contains(flash, "Allowed once") {
		t.Errorf("a's own assertion: the page says %q", flash)
	}
	if flash := postAssertion(t, browser, ca.Ceremony, ca.Credential, ca.CSRF); !strings.Contains(flash, "already used") {
		t.Errorf("a's assertion replayed: the page says %q", flash)
	}

	// An authenticator nobody registered, holding a key under the
	// registered credential's id, cannot allow.
	creds, err := chromedp.Call(browser, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: auth})
	if err != nil || len(creds.Credentials) != 1 {
		t.Fatalf("virtual credentials: %v %+v", err, creds)
	}
	reg := creds.Credentials[0]
	if _, err := chromedp.Call(browser, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: auth}); err != nil {
		t.Fatal(err)
	}
	other := webtest.VirtualAuthenticator(t, browser)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	// Sent as a plain object: the typed one names CMTG fields this
	// Chromium refuses.
	add := map[string]any{"authenticatorId": other, "credential": map[string]any{
		"credentialId": reg.CredentialID, "isResidentCredential": true, "rpId": "localhost",
		"privateKey": pkcs8, "userHandle": reg.UserHandle, "signCount": 1000}}
	if err := chromedp.Do(browser, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		return tg.Call(ctx, webauthn.CommandAddCredential, add, nil)
	})); err != nil {
		t.Fatal(err)
	}
	if flash := clickOnRequestPage(t, browser, base, b, "allow_once"); !strings.Contains(flash, "Passkey refused") {
		t.Errorf("an unregistered authenticator's allow: the page says %q", flash)
	}
	stillPending(t, g, b, "an unregistered authenticator's assertion")

	// Deny stays a tap, and the admin API may deny.
	if st, body := g.call("POST", "/v1/requests/"+b+"/decision", rtAdminToken, map[string]any{"decision": "deny"}); st != http.StatusOK {
		t.Fatalf("admin deny: %d %s", st, body)
	}

	verifyPasskeyRows(t, g, 2)
}

// verifyPasskeyRows checks the audit trail's passkey-signed rows again,
// offline: there must be n, all verifying; then an edit with sqlite3 of
// the first one's signature, and of the last one's content hash, makes
// each of them fail, and only them.
func verifyPasskeyRows(t *testing.T, g *routesGW, n int) {
	t.Helper()
	ctx := context.Background()
	invalid := func() (bad []int64) {
		checks, err := passkeys.New(g.app.Service.DB(), nil).VerifyAudit(ctx, storage.AuditFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(checks) != n {
			t.Fatalf("%d passkey-signed rows, want %d", len(checks), n)
		}
		for _, c := range checks {
			if c.Err != nil {
				bad = append(bad, c.Row.Seq)
			}
		}
		return bad
	}
	if bad := invalid(); len(bad) != 0 {
		t.Fatalf("rows %v do not verify", bad)
	}
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 tool is needed (apt-get install sqlite3)")
	}
	const signed = `(SELECT %s(seq) FROM audit WHERE detail LIKE '%%passkey_signature%%')`
	for i, edit := range []string{
		`UPDATE audit SET detail = json_set(detail, '$.passkey_signature', 'MEUCIQD` + strings.Repeat("A", 40) + `') WHERE seq = ` + fmt.Sprintf(signed, "MIN"),
		`UPDATE audit SET detail = json_set(detail, '$.content_hash', '` + strings.Repeat("0", 64) + `') WHERE seq = ` + fmt.Sprintf(signed, "MAX"),
	} {
		if out, err := exec.Command(sqlite3, "-cmd", ".timeout 10000", g.cfg.Storage.Path, edit).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3: %v %s", err, out)
		}
		if bad := invalid(); len(bad) != i+1 {
			t.Errorf("after edit %d, invalid rows %v, want %d", i+1, bad, i+1)
		}
	}
}

// TestPasskeys_SlackQuorumTwo: a step-up route with quorum 2 on Slack.
// The card keeps Deny and has no Allow button; a forged Allow click is
// told where to allow; two web users each allow on the web page with
// their own passkey, each allow counted with its own assertion, and
// every signed row verifies offline.
func TestPasskeys_SlackQuorumTwo(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newChatGW(t, func(c *config.Config) {
		c.Web.Users = []config.WebUser{{Name: "owner"}, {Name: "roberto"}, {Name: "eve"}}
		c.Approvals.Routes = []config.Route{{Capability: "fs:write", Notify: []string{"slack"},
			Approvers: []string{"web:owner", "web:roberto", "slack:" + rtSlackOp, "agent:boss"}, Quorum: 2,
			StepUp: config.StepUpPasskey}}
	})
	base := g.pageBase()
	owner, _ := webtest.PasskeyBrowser(t, ctx, chromium, g.app, base, "owner", "Pixel")
	roberto, _ := webtest.PasskeyBrowser(t, ctx, chromium, g.app, base, "roberto", "iPhone")

	answer := g.ask("fs:write", "/srv/mail/customers.csv", "60s")
	id := g.pendingID("/srv/mail/customers.csv")
	card := g.slackCard(id, nil)
	blocks, _ := json.Marshal(card.Blocks)
	for _, want := range []string{slack.SlackActionDeny, "passkey", base + "/r/" + id} {
		wantIn(t, "slack step-up card", string(blocks), want)
	}
	if strings.Contains(string(blocks), slack.SlackActionAllowOnce) {
		t.Errorf("the step-up card has an Allow button: %s", blocks)
	}
	told := g.click(rtSlackOp, id, card, slack.SlackActionAllowOnce, true)
	wantIn(t, "forged allow click", told, "passkey")
	stillPending(t, g, id, "an Allow click on Slack")
	if st, body := g.call("POST", "/v1/requests/"+id+"/decision", rtAdminToken, map[string]any{"decision": "allow_once"}); st != http.StatusForbidden || !strings.Contains(string(body), `"step_up_required"`) {
		t.Fatalf("admin allow: %d %s, want 403 step_up_required", st, body)
	}

	// A web user the route does not name is refused before any passkey
	// signs anything.
	eve := passkeystest.Login(t, base, webtest.LoginLink(t, g.app, base, "eve"))
	eveKey := &passkeystest.Authenticator{Origin: base}
	eve.Register(eveKey, "EvePhone")
	if st, body := eve.Post("/web/decide/passkey/begin", url.Values{"id": {id}, "decision": {"allow_once"}}); st != http.StatusForbidden {
		t.Errorf("eve's step-up: %d %s, want 403", st, body)
	}

	if flash := clickOnRequestPage(t, owner, base, id, "allow_once"); !strings.Contains(flash, "1 of 2") {
		t.Errorf("after the owner's allow the page says %q", flash)
	}
	stillPending(t, g, id, "one passkey allow of two")
	if flash := clickOnRequestPage(t, roberto, base, id, "allow_once"); !strings.Contains(flash, "Allowed once") {
		t.Errorf("after roberto's allow the page says %q", flash)
	}
	r := agentAnswer(t, answer)
	if r.Status != approvals.StatusAllowed || len(r.Approvals) != 2 || r.Approvals[0].Passkey != "Pixel" || r.Approvals[1].Passkey != "iPhone" {
		t.Fatalf("agent got %s with approvals %+v, want allowed with Pixel's and iPhone's", r.Status, r.Approvals)
	}
	verifyPasskeyRows(t, g, 2)
}

// TestPasskeys_SQLiteAndPostgreSQL: the passkey store on both databases,
// through the page's endpoints with a software authenticator: a passkey
// added, an allow signed and verified again from the audit trail, the
// same assertion's challenge refused the second time, a clone (its sign
// count behind) refused, a removed passkey refused, its row still
// verifiable.
func TestPasskeys_SQLiteAndPostgreSQL(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			var dsn string
			if db == "postgres" {
				dsn = storagetest.FreshSchema(t) // skips, saying why, without a server
			}
			app := webtest.NewApp(t, func(c *config.Config) {
				if dsn != "" {
					c.Storage.Driver, c.Storage.DSN = "postgres", dsn
				}
				c.Approvals.Routes = []config.Route{{Capability: "fs:write", Quorum: 1, StepUp: config.StepUpPasskey}}
			})
			srv, _ := webtest.Server(t, app)
			ctx := context.Background()
			w := passkeystest.Login(t, srv.URL, webtest.LoginLink(t, app, srv.URL, "owner"))
			key := &passkeystest.Authenticator{Origin: srv.URL}
			w.Register(key, "") // no name: "passkey added <date>"
			r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/pg.txt"))
			if flash := w.Decide(key, r.ID, "allow_once"); !strings.Contains(flash, "Allowed once") {
				t.Fatalf("allow with the passkey: %q", flash)
			}
			r2 := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/pg2.txt"))
			if flash := w.Decide(key.Clone(), r2.ID, "allow_once"); !strings.Contains(flash, "cloned") {
				t.Errorf("a clone: %q", flash)
			}
			list, err := passkeys.New(app.Service.DB(), nil).List(ctx, "owner")
			if err != nil || len(list) != 1 || !strings.HasPrefix(list[0].Name, "passkey added 20") {
				t.Fatalf("passkeys: %v %+v", err, list)
			}
			if _, page := w.Post("/web/passkeys/remove", url.Values{"id": {fmt.Sprint(list[0].ID)}}); !strings.Contains(page, "removed") {
				t.Fatalf("remove: %s", page)
			}
			if st, body := w.Post("/web/decide/passkey/begin", url.Values{"id": {r2.ID}, "decision": {"allow_once"}}); st != http.StatusBadRequest ||
				!strings.Contains(body, "no passkey") {
				t.Errorf("step-up with no passkey left: %d %s", st, body)
			}
			checks, err := passkeys.New(app.Service.DB(), nil).VerifyAudit(ctx, storage.AuditFilter{})
			if err != nil || len(checks) != 1 || checks[0].Err != nil || checks[0].Row.RequestID != r.ID {
				t.Fatalf("audit check after the removal: %v %+v", err, checks)
			}
			if got := webtest.Fetch(t, srv.URL, r2.ID); got.Status != approvals.StatusPending {
				t.Errorf("the clone's request is %s", got.Status)
			}
		})
	}
}
