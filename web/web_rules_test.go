package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web/webtest"
)

func TestWeb_RulesListAddRemove(t *testing.T) {
	app := webtest.NewApp(t, func(cfg *config.Config) {
		cfg.Policy.Rules = []config.Rule{{Capability: "*", Target: "*password*", Action: "block"}}
	})
	srv, c := webtest.Server(t, app)
	page := webtest.Page(t, c, srv.URL)
	if !strings.Contains(page, `id="rule-config-1" data-rule="config:1" data-source="config"`) || !strings.Contains(page, "*password*") {
		t.Fatalf("the file's rule is not listed with its source:\n%s", page)
	}
	if i := strings.Index(page, `id="rule-config-1"`); strings.Contains(page[i:i+600], "/web/rules/remove") {
		t.Errorf("the file's rule has a Remove button")
	}
	// Add: a require_approval rule on llm:local, which the table allows.
	status, page := webtest.PostForm(t, c, srv.URL+"/web/rules/add", url.Values{"csrf": {webtest.CSRF(t, page)},
		"capability": {"llm:local"}, "target": {"*"}, "action": {"require_approval"}, "agent": {"a1"}, "position": {"top"}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "Added rule api:1") || !strings.Contains(page, `id="rule-api-1"`) {
		t.Fatalf("add: %d\n%s", status, page)
	}
	list, err := app.Rules.List(context.Background())
	if err != nil || len(list) != 2 || list[1].ID != "api:1" || list[1].CreatedBy != "web:owner" {
		t.Fatalf("rules after the add: %+v %v", list, err)
	}
	r := webtest.Submit(t, srv.URL, map[string]any{"capability": "llm:local", "intent": "summarise"}) // 202: the rule asks
	if r.Status != "pending" {
		t.Fatalf("llm:local after the rule: %s", r.Status)
	}
	// A refused rule says why, naming the field, and adds nothing.
	status, page = webtest.PostForm(t, c, srv.URL+"/web/rules/add", url.Values{"csrf": {webtest.CSRF(t, page)},
		"capability": {"code:exec"}, "target": {"*"}, "action": {"approve"}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "Rule not added: target: an approve rule on code:exec") {
		t.Fatalf("refused add: %d\n%s", status, page)
	}
	// Remove the run-time rule; the file's cannot be removed.
	status, page = webtest.PostForm(t, c, srv.URL+"/web/rules/remove", url.Values{"csrf": {webtest.CSRF(t, page)}, "id": {"api:1"}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "Removed rule api:1") || strings.Contains(page, `id="rule-api-1"`) {
		t.Fatalf("remove: %d\n%s", status, page)
	}
	status, page = webtest.PostForm(t, c, srv.URL+"/web/rules/remove", url.Values{"csrf": {webtest.CSRF(t, page)}, "id": {"config:1"}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "comes from the config file") {
		t.Fatalf("remove config:1: %d\n%s", status, page)
	}
	// Without the CSRF token nothing changes.
	status, _ = webtest.PostForm(t, c, srv.URL+"/web/rules/add", url.Values{"capability": {"fs:read"}, "target": {"*"}, "action": {"block"}}, nil)
	if status != http.StatusForbidden {
		t.Errorf("add without csrf: %d, want 403", status)
	}
	if list, _ := app.Rules.List(context.Background()); len(list) != 1 {
		t.Errorf("rules at the end: %+v", list)
	}
}

// TestWebBrowser_Rules drives the rules section in headless Chromium: add
// a block rule with the form, see it listed as a run-time rule, see it
// decide the next request, remove it with its button.
func TestWebBrowser_Rules(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app := webtest.NewApp(t, func(cfg *config.Config) {
		cfg.Policy.Rules = []config.Rule{{Capability: "*", Target: "*password*", Action: "block"}}
	})
	base := webtest.Serve(t, ctx, app)
	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()

	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	err := chromedp.Do(browser,
		chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")), // the one-time link lands on /
		chromedp.WaitVisible(css("#rule-config-1")),
		chromedp.SetValue(css("#rule-capability"), "fs:write"),
		chromedp.SetValue(css("#rule-target"), "/srv/**"),
		chromedp.SetValue(css("#rule-action"), "block"),
		chromedp.Click(css("#add-rule button[type=submit]")),
		chromedp.WaitVisible(css("#rule-api-1")),
	)
	if err != nil {
		t.Fatalf("browser: add a rule: %v", err)
	}
	row, err := chromedp.Run(browser, chromedp.Text(css("#rule-api-1")))
	if err != nil {
		t.Fatal(err)
	}
	flashText, err := chromedp.Run(browser, chromedp.Text(css("#flash")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(row, "block") || !strings.Contains(row, "/srv/**") || !strings.Contains(strings.ToLower(row), "api") {
		t.Errorf("rule row %q", row)
	}
	if !strings.Contains(flashText, "Added rule api:1") {
		t.Errorf("flash %q", flashText)
	}
	// The very next request is decided by it.
	if r := apiSubmit(t, base, webtest.FSWrite("/srv/app/config.yml")); r.Status != "denied" {
		t.Errorf("fs:write under /srv after the block rule: %s", r.Status)
	}
	err = chromedp.Do(browser,
		chromedp.Click(css("#rule-api-1 button[type=submit]")),
		chromedp.WaitNotPresent(css("#rule-api-1")),
	)
	if err != nil {
		t.Fatalf("browser: remove the rule: %v", err)
	}
	if flashText, err = chromedp.Run(browser, chromedp.Text(css("#flash"))); err != nil || !strings.Contains(flashText, "Removed rule api:1") {
		t.Errorf("flash after remove %q %v", flashText, err)
	}
	if r := apiSubmit(t, base, webtest.FSWrite("/srv/app/config2.yml")); r.Status != "pending" {
		t.Errorf("fs:write under /srv after the remove: %s", r.Status)
	}
}

// apiSubmit posts a request through the agent API, whatever it answers.
func apiSubmit(t *testing.T, baseURL string, body map[string]any) approvals.Request {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/requests", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+webtest.AgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /v1/requests: %v", err)
	}
	defer resp.Body.Close()
	var r approvals.Request
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("decode request: %v", err)
	}
	return r
}

// A rule an admin agent added over the API is agent text: the page shows
// its target and scope with hidden characters escaped, as on the cards,
// and so does the flash of an add from the form.
func TestWeb_RulesShowNoHiddenCharacters(t *testing.T) {
	app := webtest.NewApp(t, nil)
	if _, err := app.Rules.Add(context.Background(), policy.NewRule{Capability: "fs:write",
		Target: "/srv/a\u202eb/**", Action: policy.ActionApprove, SenderID: "own\u200ber"}, "api:admin"); err != nil {
		t.Fatal(err)
	}
	srv, c := webtest.Server(t, app)
	page := webtest.Page(t, c, srv.URL)
	i := strings.Index(page, `id="rule-api-1"`)
	if i < 0 {
		t.Fatalf("the rule is not listed:\n%s", page)
	}
	row := page[i:min(len(page), i+800)]
	if strings.ContainsAny(row, "\u202e\u200b") || !strings.Contains(row, "/srv/a⟦U&#43;202E⟧b/**") ||
		!strings.Contains(row, "own⟦U&#43;200B⟧er") {
		t.Errorf("the rule row shows hidden characters raw or not escaped:\n%s", row)
	}
	_, page = webtest.PostForm(t, c, srv.URL+"/web/rules/add", url.Values{"csrf": {webtest.CSRF(t, page)},
		"capability": {"fs:read"}, "target": {"/x\u2066y/**"}, "action": {"block"}}, nil)
	if strings.ContainsAny(page, "\u202e\u200b\u2066") || !strings.Contains(page, "/x⟦U&#43;2066⟧y/**") {
		t.Errorf("after an add the page shows hidden characters raw")
	}
}
