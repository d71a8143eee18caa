package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web/webtest"
)

// signedChange is what the page's passkey flow for a rule or grant change
// gave back: the replay the server sent before the assertion, and the
// flash the page ended on.
type signedChange struct {
	Replay string `json:"replay"`
	Flash  string `json:"flash"`
}

// signPolicyChange runs, in the browser's page, the passkey flow of the
// form sel (after setup, JavaScript that fills it): the begin answers the
// change's replay and the options, the virtual authenticator signs, and
// the assertion is posted.
func signPolicyChange(t *testing.T, browser context.Context, sel, setup string) signedChange {
	t.Helper()
	js := `(async () => {
  const f = document.querySelector(` + strconv.Quote(sel) + `);
  ` + setup + `
  const body = new URLSearchParams(new FormData(f));
  const r = await fetch("/web/policy/passkey/begin", {method: "POST", body});
  const b = await r.json();
  if (!r.ok) throw new Error(b.error);
  const cred = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(b.options.publicKey)});
  const done = await fetch("/web/policy/passkey", {method: "POST", body: new URLSearchParams({
    ceremony: b.ceremony, credential: JSON.stringify(cred.toJSON()), csrf: body.get("csrf")})});
  const doc = new DOMParser().parseFromString(await done.text(), "text/html");
  const fl = doc.getElementById("flash");
  return {replay: b.replay, flash: fl ? fl.textContent : ""};
})()`
	c, err := chromedp.Run(browser, chromedp.Evaluate[signedChange](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("browser: sign the change of %s: %v (page: %q)", sel, err, webtest.PageText(t, browser))
	}
	return c
}

// TestWebBrowser_PolicyStepUp: with [web] policy_step_up = "passkey",
// a rule or grant change posted as a tap is refused and changes nothing;
// on the page (Chromium, virtual authenticator) the admin adds a rule,
// removes it and revokes a grant, each after the server answered the
// change's replay, each signed with the passkey; each audit row carries
// its signature and verifies offline; an edited signed row fails.
func TestWebBrowser_PolicyStepUp(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	app := webtest.NewApp(t, func(c *config.Config) { c.Web.PolicyStepUp = config.StepUpPasskey })
	base := webtest.Serve(t, ctx, app)
	browser, _ := webtest.PasskeyBrowser(t, ctx, chromium, app, base, "owner", "Pixel")

	// A tap is refused.
	tap := passkeystest.Login(t, base, webtest.LoginLink(t, app, base, "owner"))
	if _, page := tap.Post("/web/rules/add", url.Values{"capability": {"fs:read"}, "target": {"/srv/**"},
		"action": {"approve"}, "position": {"top"}}); !strings.Contains(webtest.Flash(page), "need your passkey") {
		t.Errorf("a tap's rule: the flash says %q", webtest.Flash(page))
	}
	if rules, _ := app.Server.Rules().List(ctx); len(rules) != 0 {
		t.Fatalf("a tap added a rule: %+v", rules)
	}

	if err := chromedp.Do(browser, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#add-rule"))); err != nil {
		t.Fatal(err)
	}
	add := signPolicyChange(t, browser, "#add-rule", `
  f.querySelector("[name=capability]").value = "fs:read";
  f.querySelector("[name=target]").value = "/srv/reports/**";
  f.querySelector("[name=action]").value = "approve";`)
	if !strings.Contains(add.Replay, "Replay of the last 7 days") {
		t.Errorf("the add's replay: %q", add.Replay)
	}
	if !strings.Contains(add.Flash, "Added rule") {
		t.Fatalf("the signed add: the page says %q", add.Flash)
	}
	rules, _ := app.Server.Rules().List(ctx)
	if len(rules) != 1 || rules[0].Target != "/srv/reports/**" || rules[0].CreatedBy != "web:owner" {
		t.Fatalf("rules after the signed add: %+v", rules)
	}

	g, err := app.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:write", Target: "/srv/out/*", GrantedBy: "test", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(browser, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#grant-"+strconv.FormatInt(g.ID, 10)))); err != nil {
		t.Fatal(err)
	}
	rev := signPolicyChange(t, browser, "#grant-"+strconv.FormatInt(g.ID, 10)+" form", "")
	if !strings.Contains(rev.Replay, "Revoking grant #"+strconv.FormatInt(g.ID, 10)) || !strings.Contains(rev.Flash, "Revoked grant") {
		t.Fatalf("the signed revoke: replay %q, page %q", rev.Replay, rev.Flash)
	}
	rm := signPolicyChange(t, browser, "#rule-api-"+strings.TrimPrefix(rules[0].ID, "api:")+" form", "")
	if !strings.Contains(rm.Flash, "Removed rule") {
		t.Fatalf("the signed remove: replay %q, page %q", rm.Replay, rm.Flash)
	}

	// Three signed rows, each verifying; an edited target fails.
	store := passkeys.New(app.Service.DB(), nil)
	checks, err := store.VerifyAudit(ctx, storage.AuditFilter{})
	if err != nil || len(checks) != 3 {
		t.Fatalf("signed rows: %v, %d, want 3", err, len(checks))
	}
	events := map[string]bool{}
	for _, c := range checks {
		if c.Err != nil {
			t.Errorf("row %d (%s) does not verify: %v", c.Row.Seq, c.Row.Event, c.Err)
		}
		events[c.Row.Event] = true
	}
	for _, e := range []string{storage.AuditRuleAdded, storage.AuditRuleRemoved, storage.AuditGrantRevoked} {
		if !events[e] {
			t.Errorf("no signed %s row", e)
		}
	}
	row := checks[0].Row
	for _, c := range checks {
		if c.Row.Event == storage.AuditRuleAdded {
			row = c.Row
		}
	}
	row.Detail["target"] = "/srv/**"
	if _, err := store.VerifyRow(ctx, row); err == nil || !strings.Contains(err.Error(), "target") {
		t.Errorf("an edited target verifies: %v", err)
	}
	var content passkeys.PolicyChange
	_ = json.Unmarshal([]byte(row.Detail[passkeys.KeyContent].(string)), &content)
	if content.Replay == "" || content.By != "owner" {
		t.Errorf("the signed content %+v: want the replay and the admin", content)
	}
}
