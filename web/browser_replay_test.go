package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_RuleReplay: typing a rule into the add form shows, live
// and before Add rule is pressed, what it would have done to the last
// week's requests (the flipped ones named, outcome before and after);
// nothing is added until the button is pressed, and then the rule decides
// the next request as the replay said.
func TestWebBrowser_RuleReplay(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	app := webtest.NewApp(t, nil)
	base := webtest.Serve(t, ctx, app)
	for _, f := range []string{"a", "b", "c"} {
		webtest.Submit(t, base, webtest.FSWrite("/srv/data/"+f+".csv"))
	}
	webtest.Submit(t, base, webtest.FSWrite("/srv/other/z.txt"))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	// Typing replaces the target's text, as after a triple click.
	selectTarget := chromedp.Evaluate[chromedp.Void](`document.getElementById("rule-target").select()`)
	if err := chromedp.Do(browser,
		chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")),
		chromedp.WaitVisible(css("#add-rule")),
		chromedp.SetValue(css("#rule-capability"), "fs:write"),
		chromedp.SetValue(css("#rule-action"), "approve"),
		selectTarget,
		chromedp.SendKeys(css("#rule-target"), "/srv/data/*.csv"),
	); err != nil {
		t.Fatalf("browser: fill the form: %v", err)
	}
	wait, stop := context.WithTimeout(browser, 30*time.Second)
	defer stop()
	const summary = `document.getElementById("rule-replay-summary").textContent`
	if _, err := chromedp.Run(wait, chromedp.Poll[bool](summary+`.includes("3 of 4 requests")`)); err != nil {
		got, _ := chromedp.Run(browser, chromedp.Text(css("#rule-replay")))
		t.Fatalf("the replay did not show 3 of 4: %q (%v)", got, err)
	}
	lines, err := chromedp.Run(browser, chromedp.Text(css("#rule-replay-lines")))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a", "b", "c"} {
		if !strings.Contains(lines, "a1 · fs:write /srv/data/"+f+".csv: approval_required → allowed") {
			t.Errorf("replay lines lack %s.csv:\n%s", f, lines)
		}
	}
	if strings.Contains(lines, "/srv/other/z.txt") {
		t.Errorf("the replay names a request the rule does not cover:\n%s", lines)
	}
	if rs, err := app.Rules.List(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("rules before Add rule: %+v, %v", rs, err)
	}

	// A form that is not a rule yet says what is wrong, and adds nothing.
	if err := chromedp.Do(browser, selectTarget, chromedp.SendKeys(css("#rule-target"), " ")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(wait, chromedp.Poll[bool](summary+`.startsWith("Not a rule yet")`)); err != nil {
		got, _ := chromedp.Run(browser, chromedp.Text(css("#rule-replay")))
		t.Fatalf("an empty target: %q (%v)", got, err)
	}

	if err := chromedp.Do(browser,
		chromedp.SetValue(css("#rule-target"), "/srv/data/*.csv"),
		chromedp.Click(css("#add-rule button[type=submit]")),
		chromedp.WaitVisible(css("#rule-api-1")),
	); err != nil {
		t.Fatalf("browser: add the rule: %v", err)
	}
	if r := apiSubmit(t, base, webtest.FSWrite("/srv/data/d.csv")); r.Status != approvals.StatusAllowed {
		t.Errorf("after adding the replayed rule: %s", r.Status)
	}
}
