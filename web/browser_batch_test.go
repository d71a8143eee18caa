package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_BatchDecision: the page offers Several at once for the
// requests that need no step-up and one allow; Allow selected lists the
// chosen ids before anything is decided; Confirm decides exactly those,
// each with its own audit row, and never the step-up request nor one that
// arrived after the page was read.
func TestWebBrowser_BatchDecision(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	app := webtest.NewApp(t, func(c *config.Config) {
		c.Approvals.Routes = []config.Route{{Capability: "code:exec", Approvers: []string{"web:owner"},
			StepUp: config.StepUpPasskey, Quorum: 1}}
	})
	base := webtest.Serve(t, ctx, app)
	r1, r2 := webtest.Submit(t, base, webtest.FSWrite("/tmp/batch/1.txt")), webtest.Submit(t, base, webtest.FSWrite("/tmp/batch/2.txt"))
	r3 := webtest.Submit(t, base, webtest.FSWrite("/tmp/batch/3.txt"))
	stepUp := webtest.Submit(t, base, webtest.CodeExec("make deploy"))

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	if err := chromedp.Do(browser, chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")), chromedp.WaitVisible(chromedp.CSS("#batch"))); err != nil {
		t.Fatalf("browser: open the page: %v", err)
	}
	rows, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#batch input[name=id]")].map(i => i.value)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rows, ",") != strings.Join([]string{r1.ID, r2.ID, r3.ID}, ",") {
		t.Fatalf("batch rows %v, want %s %s %s (not the step-up %s)", rows, r1.ID, r2.ID, r3.ID, stepUp.ID)
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`#batch input[value="`+r1.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`#batch input[value="`+r2.ID+`"]`)),
		chromedp.Click(chromedp.CSS("#batch-allow")),
		chromedp.WaitVisible(chromedp.CSS("#batch-confirm-button")),
	)
	if err != nil {
		t.Fatalf("browser: Allow selected: %v", err)
	}
	listed, err := chromedp.Run(browser, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".batch-confirm-row")].map(e => e.dataset.id + " " + e.querySelector(".batch-id").textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(listed, ",") != r1.ID+" "+r1.ID+","+r2.ID+" "+r2.ID {
		t.Fatalf("confirmation lists %v", listed)
	}
	for _, r := range []approvals.Request{r1, r2} {
		if got := webtest.Fetch(t, base, r.ID); got.Status != approvals.StatusPending {
			t.Fatalf("%s decided before Confirm: %s", r.ID, got.Status)
		}
	}
	late := webtest.Submit(t, base, webtest.FSWrite("/tmp/batch/late.txt")) // arrives after the page was read
	if err := chromedp.Do(browser, chromedp.Click(chromedp.CSS("#batch-confirm-button")), chromedp.WaitVisible(chromedp.CSS("#flash"))); err != nil {
		t.Fatalf("browser: Confirm: %v", err)
	}
	flash, _ := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#flash")))
	if !strings.Contains(flash, r1.ID) || !strings.Contains(flash, r2.ID) || !strings.Contains(flash, "2") {
		t.Errorf("flash %q", flash)
	}
	for _, r := range []approvals.Request{r1, r2} {
		got := webtest.Fetch(t, base, r.ID)
		if got.Status != approvals.StatusAllowed || got.Decision == nil || *got.Decision != approvals.AllowOnce || got.DecidedBy != "web:owner" {
			t.Errorf("%s after Confirm: %s %v by %s", r.ID, got.Status, got.Decision, got.DecidedBy)
		}
		rows, err := app.DB.QueryAudit(context.Background(), storage.AuditFilter{RequestID: r.ID, Event: storage.AuditDecision})
		if err != nil || len(rows) != 1 {
			t.Errorf("%s: %d decision audit rows (%v), want its own one", r.ID, len(rows), err)
		}
	}
	for _, r := range []approvals.Request{r3, stepUp, late} {
		if got := webtest.Fetch(t, base, r.ID); got.Status != approvals.StatusPending {
			t.Errorf("%s was not on the list and is %s", r.ID, got.Status)
		}
	}
}
