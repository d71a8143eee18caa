package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web/webtest"
)

// askNow posts a request that policy decides on arrival (a grant covers
// it) and returns it.
func (g *pushGW) askNow(body map[string]any) approvals.Request {
	g.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/requests", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+webtest.AgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r approvals.Request
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil || r.Status != approvals.StatusAllowed {
		g.t.Fatalf("a request the grant covers: %d %s", resp.StatusCode, raw)
	}
	return r
}

// grantUses reads a grant's uses and last use through GET /v1/grants.
func (g *pushGW) grant(id int64) policy.Grant {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.base+"/v1/grants", nil)
	req.Header.Set("Authorization", "Bearer "+webtest.AgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Grants []policy.Grant }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		g.t.Fatal(err)
	}
	for _, gr := range out.Grants {
		if gr.ID == id {
			return gr
		}
	}
	g.t.Fatalf("grant %d not in GET /v1/grants", id)
	return policy.Grant{}
}

// TestWebBrowser_GrantLedger: a grant's uses are counted off the
// decision's path and show in GET /v1/grants (uses, last_used_at) and on
// the page's Grants section with "expires in N days" and Revoke; the
// weekly review pushes the grants that expire within 7 days and those
// unused for 30, and the digest counts them.
func TestWebBrowser_GrantLedger(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	clock := testclock.New(time.Now())
	g := newPushGW(t, clock, nil)
	anna := g.user("anna")
	g.subscribe(anna, "Chrome · Android")

	r := g.ask(webtest.FSWrite("/tmp/ledger/a.txt"))
	g.fake.Next(t, pushWait)
	page := webtest.Page(t, anna, g.base)
	if status, body := webtest.PostForm(t, anna, g.base+"/web/decide", webtest.Form("csrf", webtest.CSRF(t, page), "id", r.ID, "decision", "allow_always"), nil); status != http.StatusOK {
		t.Fatalf("Allow always: %d %s", status, body)
	}
	g.fake.Next(t, pushWait) // the outcome
	decided := webtest.Fetch(t, g.base, r.ID)
	if decided.GrantID == nil {
		t.Fatalf("no grant written: %+v", decided)
	}
	id := *decided.GrantID
	for range 3 {
		g.askNow(webtest.FSWrite("/tmp/ledger/a.txt"))
	}
	deadline := time.Now().Add(pushWait)
	for {
		gr := g.grant(id)
		if gr.Uses == 3 && gr.LastUsedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grant %d: uses %d, last used %v; want 3 and a time", id, gr.Uses, gr.LastUsedAt)
		}
		time.Sleep(50 * time.Millisecond)
	}

	b, closeBrowser := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer closeBrowser()
	row := chromedp.CSS(fmt.Sprintf("#grant-%d", id))
	if err := chromedp.Do(b, chromedp.Navigate(webtest.LoginLink(t, g.app, g.base, "anna")), chromedp.WaitVisible(row)); err != nil {
		t.Fatalf("browser: the page: %v", err)
	}
	text, err := chromedp.Run(b, chromedp.Text(row))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fs:write", "/tmp/ledger/a.txt", "used 3 times", "expires in 90 days", "last used"} {
		if !strings.Contains(text, want) {
			t.Errorf("grant row lacks %q: %q", want, text)
		}
	}

	// Twelve weeks on: it expires within 7 days and was not used for 30.
	clock.Add(84 * 24 * time.Hour)
	expiring, unused, err := g.app.GrantReview(context.Background(), clock.Now())
	if err != nil || len(expiring) != 1 || len(unused) != 1 || expiring[0].ID != id {
		t.Fatalf("review: %v %v %v", expiring, unused, err)
	}
	if err := g.app.SendGrantReview(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, pl := g.next()
	if pl.Title != "Grants to review" || !strings.Contains(pl.Body, "1 expire within 7 days, 1 unused for 30 days") ||
		!strings.Contains(pl.Body, fmt.Sprintf("#%d fs:write /tmp/ledger/a.txt", id)) || pl.URL != "/#grants" || len(pl.Actions) != 0 {
		t.Fatalf("weekly push: %+v", pl)
	}
	d, err := g.app.Digest(context.Background(), clock.Now())
	if err != nil || len(d.GrantsExpiring) != 1 || len(d.GrantsUnused) != 1 || d.GrantsExpiring[0].ID != id {
		t.Fatalf("digest: %+v %v", d, err)
	}

	// Revoke on the page (a new login: twelve weeks ended the session).
	b2, close2 := webtest.NewBrowser(ctx, chromium, t.TempDir())
	defer close2()
	err = chromedp.Do(b2, chromedp.Navigate(webtest.LoginLink(t, g.app, g.base, "anna")), chromedp.WaitVisible(row),
		chromedp.Click(chromedp.CSS(fmt.Sprintf("#grant-%d button", id))), chromedp.WaitVisible(chromedp.CSS("#flash")),
		chromedp.WaitNotPresent(row))
	if err != nil {
		t.Fatalf("browser: Revoke: %v", err)
	}
}
