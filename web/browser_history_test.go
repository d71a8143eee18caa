package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/web/webtest"
)

// TestWebBrowser_History drives the History view in a real headless
// Chromium: from the page to History, filter by capability, event and
// person, see only the matching decision, then open its request and read
// the request and its own audit trail.
func TestWebBrowser_History(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	app := webtest.NewApp(t, nil)
	base := webtest.Serve(t, ctx, app)
	write := webtest.Submit(t, base, webtest.FSWrite("/home/u/invoices/05.pdf"))
	exec := webtest.Submit(t, base, webtest.CodeExec("git status"))
	other := webtest.Submit(t, base, webtest.CodeExec("git log"))
	for _, d := range []struct {
		id  string
		dec approvals.Decision
		by  approvals.Actor
	}{
		{write.ID, approvals.Deny, approvals.Actor{Channel: "telegram", ID: "42", Name: "Roberto"}},
		{exec.ID, approvals.AllowOnce, approvals.Actor{Channel: "slack", ID: "U0ANN", Name: "ann"}},
		{other.ID, approvals.Deny, approvals.Actor{Channel: "slack", ID: "U0ANN", Name: "ann"}},
	} {
		if _, err := app.Service.Decide(ctx, d.id, d.dec, d.by); err != nil {
			t.Fatal(err)
		}
	}

	browser, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()

	err := chromedp.Do(browser,
		chromedp.Navigate(webtest.LoginLink(t, app, base, "owner")), // the one-time link lands on /
		chromedp.Click(chromedp.CSS("#history-link")),
		chromedp.WaitVisible(chromedp.CSS("#history-filter")),
		chromedp.WaitVisible(chromedp.CSS("#history .item")),
	)
	if err != nil {
		t.Fatalf("browser: open History: %v", err)
	}
	all, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#history")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chain_genesis", "outcome", "telegram:Roberto (42)", "slack:ann (U0ANN)", "JST"} {
		if !strings.Contains(all, want) {
			t.Errorf("unfiltered History lacks %q:\n%s", want, all)
		}
	}
	err = chromedp.Do(browser,
		chromedp.SetValue(chromedp.CSS(`select[name="capability"]`), "code:exec"),
		chromedp.SetValue(chromedp.CSS(`input[name="event"]`), "decision"),
		chromedp.SetValue(chromedp.CSS(`input[name="person"]`), "ann"),
		chromedp.SetValue(chromedp.CSS(`input[name="since"]`), "1h"),
		chromedp.Click(chromedp.CSS(`#history-filter button[type="submit"]`)),
		// The filtered page (the unfiltered one has the same link).
		chromedp.WaitVisible(chromedp.CSS(`#history[data-event="decision"] a.open-request[href="/requests/`+exec.ID+`"]`)),
	)
	if err != nil {
		t.Fatalf("browser: filter: %v", err)
	}
	filtered, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#history")))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(filtered, "#"); n != 2 || !strings.Contains(filtered, "allow_once") ||
		!strings.Contains(filtered, "deny") || strings.Contains(filtered, "Roberto") || strings.Contains(filtered, "outcome") {
		t.Fatalf("filtered History (want ann's two code:exec decisions only):\n%s", filtered)
	}
	err = chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(`a.open-request[href="/requests/`+exec.ID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#request-"+exec.ID)),
	)
	if err != nil {
		t.Fatalf("browser: open the request: %v", err)
	}
	card, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#request-"+exec.ID)))
	if err != nil {
		t.Fatal(err)
	}
	trail, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("#request-trail")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"git status", exec.ID, "ann"} {
		if !strings.Contains(card, want) {
			t.Errorf("request card lacks %q:\n%s", want, card)
		}
	}
	if !strings.Contains(trail, "outcome") || !strings.Contains(trail, "decision") || strings.Contains(trail, "git log") ||
		strings.Count(trail, "#") != 2 {
		t.Errorf("request trail (want its outcome and decision):\n%s", trail)
	}
}

// TestWebHistory_Pages: a bad time says so; an unknown request is a 404
// pointing back to History; a pruned request still shows its audit rows;
// row text is escaped.
func TestWebHistory_Pages(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get("/history?since=yesterday"); st != http.StatusOK || !strings.Contains(body, "is not a time") {
		t.Errorf("bad since: %d\n%s", st, body)
	}
	if st, body := get("/requests/nope"); st != http.StatusNotFound || !strings.Contains(body, `href="/history"`) {
		t.Errorf("unknown request: %d\n%s", st, body)
	}
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/home/u/<b>x</b>.txt"))
	if _, err := app.DB.ExecContext(context.Background(), `DELETE FROM requests WHERE id = $1`, r.ID); err != nil {
		t.Fatal(err)
	}
	st, body := get("/requests/" + r.ID)
	if st != http.StatusOK || !strings.Contains(body, "no longer stored") || !strings.Contains(body, "outcome") {
		t.Errorf("pruned request: %d\n%s", st, body)
	}
	if st, body := get("/history?agent=a1"); st != http.StatusOK || !strings.Contains(body, "/requests/"+r.ID) ||
		strings.Contains(body, "<b>x</b>") {
		t.Errorf("history by agent: %d\n%s", st, body)
	}
}
