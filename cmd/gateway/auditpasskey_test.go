package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys/passkeystest"
)

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// passkeyWeb is a web session driven over HTTP, with a software
// authenticator for its passkey ceremonies.
type passkeyWeb struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

func newPasskeyWeb(t *testing.T, g *liveGateway, user string) *passkeyWeb {
	t.Helper()
	base := strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1)
	jar, _ := cookiejar.New(nil)
	w := &passkeyWeb{t: t, base: base, c: &http.Client{Jar: jar}}
	link, _, err := g.App.LoginLink(context.Background(), base, user)
	if err != nil {
		t.Fatal(err)
	}
	page := w.get(link)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf token after the login link:\n%s", page)
	}
	w.csrf = m[1]
	return w
}

func (w *passkeyWeb) get(u string) string {
	w.t.Helper()
	resp, err := w.c.Get(u)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func (w *passkeyWeb) post(path string, form url.Values) (int, string) {
	w.t.Helper()
	form.Set("csrf", w.csrf)
	resp, err := w.c.PostForm(w.base+path, form)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (w *passkeyWeb) begin(path string, form url.Values) passkeystest.Begun {
	w.t.Helper()
	st, body := w.post(path, form)
	var b passkeystest.Begun
	if err := json.Unmarshal([]byte(body), &b); err != nil || st != http.StatusOK {
		w.t.Fatalf("%s: %d %s", path, st, body)
	}
	return b
}

// register adds a passkey named name with a.
func (w *passkeyWeb) register(a *passkeystest.Authenticator, name string) {
	w.t.Helper()
	b := w.begin("/web/passkeys/begin", url.Values{})
	cred, err := a.Create(b)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, page := w.post("/web/passkeys/add", url.Values{"ceremony": {b.Ceremony}, "credential": {cred}, "name": {name}}); !strings.Contains(page, name) {
		w.t.Fatalf("passkey %s not added:\n%s", name, page)
	}
}

// allow runs the step-up of Allow once on request id with a and returns
// the page's flash.
func (w *passkeyWeb) allow(a *passkeystest.Authenticator, id string) string {
	w.t.Helper()
	b := w.begin("/web/decide/passkey/begin", url.Values{"id": {id}, "decision": {"allow_once"}})
	cred, err := a.Get(b)
	if err != nil {
		w.t.Fatal(err)
	}
	_, page := w.post("/web/decide/passkey", url.Values{"ceremony": {b.Ceremony}, "credential": {cred}})
	if m := regexp.MustCompile(`id="flash">([^<]*)<`).FindStringSubmatch(page); m != nil {
		return m[1]
	}
	return ""
}

// TestAuditCLI_PasskeyRows: allows signed with a passkey (a software
// authenticator over the web page's endpoints) are checked again by
// `gateway audit verify` and told by `gateway audit show`; a signature
// edited with sqlite3 makes both say so and exit 1. A clone of the
// authenticator (its sign count behind) is refused; a synced passkey that
// always says 0 keeps working.
func TestAuditCLI_PasskeyRows(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 tool is needed (apt-get install sqlite3; .ci/run installs it)")
	}
	g := startLive(t, func(c *config.Config) {
		c.Approvals.Routes = []config.Route{{Capability: "fs:write", Quorum: 1, StepUp: config.StepUpPasskey}}
	})
	ctx := context.Background()
	w := newPasskeyWeb(t, g, "owner")
	phone := &passkeystest.Authenticator{Origin: w.base}
	w.register(phone, "iPhone")
	laptop := &passkeystest.Authenticator{Origin: w.base, Synced: true}
	w.register(laptop, "MacBook")

	a1 := client.New(g.URL, liveAgentToken)
	ask := func(target string) string {
		r, err := a1.Request(ctx, client.Req{CallID: target, Capability: "fs:write", Target: target}, 0)
		if err != nil || r.Status != "pending" {
			t.Fatalf("ask %s: %v %+v", target, err, r)
		}
		return r.ID
	}
	status := func(id string) approvals.Status {
		r, err := g.App.Service.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	first := ask("/srv/a.txt")
	if flash := w.allow(phone, first); !strings.Contains(flash, "Allowed once") || status(first) != approvals.StatusAllowed {
		t.Fatalf("allow with the phone's passkey: %q, %s", flash, status(first))
	}
	// A clone of the phone, its counter behind: refused.
	cloned := ask("/srv/b.txt")
	if flash := w.allow(phone.Clone(), cloned); !strings.Contains(flash, "cloned") || status(cloned) != approvals.StatusPending {
		t.Fatalf("a cloned authenticator: %q, %s", flash, status(cloned))
	}
	// The synced passkey says 0 every time, and keeps working.
	for _, target := range []string{"/srv/c.txt", "/srv/d.txt"} {
		id := ask(target)
		if flash := w.allow(laptop, id); !strings.Contains(flash, "Allowed once") {
			t.Fatalf("synced passkey on %s: %q", target, flash)
		}
	}

	env := auditEnv(t, g)
	res := runCLI(ctx, env, "", "audit", "verify")
	if res.code != 0 || strings.Count(res.stdout, ": passkey signature ok") != 3 ||
		!strings.Contains(res.stdout, "request "+first+": passkey signature ok") {
		t.Fatalf("audit verify: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(ctx, env, "", "audit", "show", first)
	if res.code != 0 || !strings.Contains(res.stdout, "Allowed once by owner at ") ||
		!strings.Contains(res.stdout, "with the passkey 'iPhone'; signature verified") {
		t.Fatalf("audit show: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	edit := `UPDATE audit SET detail = json_set(detail, '$.passkey_signature', 'MEUCIQD` + strings.Repeat("A", 40) +
		`') WHERE request_id = '` + first + `' AND event = 'decision'`
	if out, err := exec.Command(sqlite3, g.App.Config.Storage.Path, edit).CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	res = runCLI(ctx, env, "", "audit", "verify")
	if res.code != exitFail || !strings.Contains(res.stdout, "request "+first+": passkey signature invalid: the signature does not verify") ||
		strings.Count(res.stdout, ": passkey signature ok") != 2 {
		t.Fatalf("audit verify after the edit: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = runCLI(ctx, env, "", "audit", "show", first)
	if res.code != exitFail || !strings.Contains(res.stdout, "signature INVALID") {
		t.Fatalf("audit show after the edit: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
