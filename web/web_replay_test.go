package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/metnos/gateway/web/webtest"
)

// TestWeb_RuleReplay: POST /web/rules/simulate, the add form's live replay:
// it needs the page's CSRF token; it names the requests a rule would flip,
// their targets shown as cards show agent strings (a hidden character as
// an escape); a form that is not a rule yet says what is wrong; it counts
// only what the rule itself changes, against the policy without it, not
// against the outcomes on arrival (a grant written since is not the
// rule's); nothing is ever added.
func TestWeb_RuleReplay(t *testing.T) {
	app := webtest.NewApp(t, nil)
	srv, c := webtest.Server(t, app)
	webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/data/a.csv"))
	webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/data/b\u202e.csv"))
	z := webtest.Submit(t, srv.URL, webtest.FSWrite("/srv/other/z.txt"))
	form := url.Values{"capability": {"fs:write"}, "target": {"/srv/data/*"}, "action": {"approve"}, "position": {"top"}}
	if st, _ := webtest.PostForm(t, c, srv.URL+"/web/rules/simulate", form, nil); st != http.StatusForbidden {
		t.Fatalf("without the CSRF token: %d, want 403", st)
	}
	form.Set("csrf", webtest.CSRF(t, webtest.Page(t, c, srv.URL)))
	replay := func() (summary string, lines []string, failed bool) {
		t.Helper()
		st, body := webtest.PostForm(t, c, srv.URL+"/web/rules/simulate", form, nil)
		var v struct {
			Summary string   `json:"summary"`
			Lines   []string `json:"lines"`
			Error   bool     `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil || st != http.StatusOK {
			t.Fatalf("replay: %d %s", st, body)
		}
		return v.Summary, v.Lines, v.Error
	}
	summary, lines, failed := replay()
	all := strings.Join(lines, "\n")
	if failed || !strings.Contains(summary, "2 of 3 requests") || len(lines) != 2 ||
		!strings.Contains(all, "/srv/data/a.csv: approval_required → allowed") || !strings.Contains(all, "/srv/data/b⟦U+202E⟧.csv") ||
		strings.ContainsRune(all, '\u202e') {
		t.Fatalf("replay %q %q", summary, lines)
	}
	decide := url.Values{"id": {z.ID}, "decision": {"allow_always"}, "csrf": {form.Get("csrf")}}
	if st, page := webtest.PostForm(t, c, srv.URL+"/web/decide", decide, nil); st != http.StatusOK || !strings.Contains(page, `class="flash ok"`) {
		t.Fatalf("Allow always on z.txt: %d", st)
	}
	form.Set("target", "/srv/none/*")
	if summary, lines, failed := replay(); failed || !strings.Contains(summary, "0 of 3 requests") || len(lines) != 0 {
		t.Fatalf("a rule that matches nothing, with a grant written since the requests arrived: %q %q", summary, lines)
	}
	form.Set("target", "")
	if summary, _, failed := replay(); !failed || !strings.HasPrefix(summary, "Not a rule yet: target") {
		t.Fatalf("an empty target: %q (failed %v)", summary, failed)
	}
	if rs, err := app.Rules.List(t.Context()); err != nil || len(rs) != 0 {
		t.Fatalf("rules after replays: %+v, %v", rs, err)
	}
}
