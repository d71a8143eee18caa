package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/web/webtest"
)

// TestWeb_Suggestions: three reads of one directory's CSV files allowed on
// the page make the Suggestions section offer /dir/*.csv; Add this rule
// adds it as a run-time rule and the next such read is allowed at once.
// A scope choice on the page grants the chosen scope.
func TestWeb_Suggestions(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	page := webtest.Page(t, c, srv.URL)
	if !strings.Contains(page, `id="suggestions"`) || !strings.Contains(page, "No suggestions") {
		t.Fatalf("no empty Suggestions section:\n%s", page)
	}
	for _, f := range []string{"a", "b", "c"} {
		r := webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/data/"+f+".csv"))
		status, _ := webtest.PostForm(t, c, srv.URL+"/web/decide",
			url.Values{"id": {r.ID}, "decision": {"allow_once"}, "csrf": {webtest.CSRF(t, webtest.Page(t, c, srv.URL))}}, nil)
		if status != http.StatusOK {
			t.Fatalf("decide: %d", status)
		}
	}
	if err := app.Server.RefreshSuggestions(t.Context()); err != nil {
		t.Fatal(err)
	}
	page = webtest.Page(t, c, srv.URL)
	i := strings.Index(page, `id="suggestions"`)
	sec := page[i : i+strings.Index(page[i:], "</section>")]
	if !strings.Contains(sec, "<code>/srv/data/*.csv</code>") || !strings.Contains(sec, `name="target" value="/srv/data/*.csv"`) ||
		!strings.Contains(sec, "Add this rule") {
		t.Fatalf("suggestions section:\n%s", sec)
	}
	form := url.Values{"csrf": {webtest.CSRF(t, page)}}
	for _, k := range []string{"capability", "target", "action", "agent", "channel", "sender_id"} {
		j := strings.Index(sec, `name="`+k+`" value="`)
		v := sec[j+len(`name="`+k+`" value="`):]
		form.Set(k, v[:strings.IndexByte(v, '"')])
	}
	if status, body := webtest.PostForm(t, c, srv.URL+"/web/rules/add", form, nil); status != http.StatusOK || !strings.Contains(body, "approve") {
		t.Fatalf("add this rule: %d\n%s", status, body)
	}
	b, _ := json.Marshal(webtest.FSWrite("/srv/data/d.csv"))
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/requests", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+webtest.AgentToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var next approvals.Request
	_ = json.NewDecoder(resp.Body).Decode(&next)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || next.Status != approvals.StatusAllowed {
		t.Fatalf("after adding the suggestion: %d %s (%s)", resp.StatusCode, next.Status, next.Reason)
	}

	// The page's scope select: the chosen scope is granted.
	r := webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/docs/x.md"))
	status, _ := webtest.PostForm(t, c, srv.URL+"/web/decide", url.Values{"id": {r.ID}, "decision": {"allow_always"},
		"scope_index": {"2"}, "csrf": {webtest.CSRF(t, webtest.Page(t, c, srv.URL))}}, nil)
	got := webtest.Fetch(t, srv.URL, r.ID)
	if status != http.StatusOK || got.GrantID == nil {
		t.Fatalf("allow always with a scope: %d %+v", status, got)
	}
	if g, _ := app.Grants.Get(t.Context(), *got.GrantID); g.Target != "/srv/docs/*" {
		t.Fatalf("grant %q, want the chosen /srv/docs/*", g.Target)
	}
	// A scope index the request does not list decides nothing.
	r2 := webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/other/y.md"))
	_, body := webtest.PostForm(t, c, srv.URL+"/web/decide", url.Values{"id": {r2.ID}, "decision": {"allow_always"},
		"scope_index": {"7"}, "csrf": {webtest.CSRF(t, webtest.Page(t, c, srv.URL))}}, nil)
	if got := webtest.Fetch(t, srv.URL, r2.ID); got.Status != approvals.StatusPending || !strings.Contains(body, "not offered") {
		t.Fatalf("a forged scope index: %s", got.Status)
	}
}
