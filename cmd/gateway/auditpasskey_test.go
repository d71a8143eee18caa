package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/storage"
)

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
	base := strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1)
	link, _, err := g.App.LoginLink(ctx, base, "owner")
	if err != nil {
		t.Fatal(err)
	}
	w := passkeystest.Login(t, base, link)
	phone := &passkeystest.Authenticator{Origin: base}
	w.Register(phone, "iPhone")
	laptop := &passkeystest.Authenticator{Origin: base, Synced: true}
	w.Register(laptop, "MacBook")

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
	if flash := w.Decide(phone, first, "allow_once"); !strings.Contains(flash, "Allowed once") || status(first) != approvals.StatusAllowed {
		t.Fatalf("allow with the phone's passkey: %q, %s", flash, status(first))
	}
	// A clone of the phone, its counter behind: refused.
	cloned := ask("/srv/b.txt")
	if flash := w.Decide(phone.Clone(), cloned, "allow_once"); !strings.Contains(flash, "cloned") || status(cloned) != approvals.StatusPending {
		t.Fatalf("a cloned authenticator: %q, %s", flash, status(cloned))
	}
	// The synced passkey says 0 every time, and keeps working.
	for _, target := range []string{"/srv/c.txt", "/srv/d.txt"} {
		id := ask(target)
		if flash := w.Decide(laptop, id, "allow_once"); !strings.Contains(flash, "Allowed once") {
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
	if out, err := exec.Command(sqlite3, "-cmd", ".timeout 10000", g.App.Config.Storage.Path, edit).CombinedOutput(); err != nil {
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

// TestAuditCLI_SignedGrant: a step-up Allow always on a wider scope signs
// that scope (content version 2), and `gateway audit verify` holds the
// row to it: the row's scope edited, the signed content edited, or the
// row's passkey user changed each fail the check and exit 1, naming why.
func TestAuditCLI_SignedGrant(t *testing.T) {
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 tool is needed (apt-get install sqlite3; .ci/run installs it)")
	}
	g := startLive(t, func(c *config.Config) {
		c.Approvals.Routes = []config.Route{{Capability: "fs:write", Quorum: 1, StepUp: config.StepUpPasskey}}
		c.Web.Users = []config.WebUser{{Name: "owner"}, {Name: "ada"}}
	})
	ctx := context.Background()
	base := strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1)
	link, _, err := g.App.LoginLink(ctx, base, "owner")
	if err != nil {
		t.Fatal(err)
	}
	w := passkeystest.Login(t, base, link)
	phone := &passkeystest.Authenticator{Origin: base}
	w.Register(phone, "iPhone")
	r, err := client.New(g.URL, liveAgentToken).Request(ctx, client.Req{CallID: "c1", Capability: "fs:write", Target: "/srv/app/x.txt"}, 0)
	if err != nil || r.Status != "pending" {
		t.Fatalf("ask: %v %+v", err, r)
	}
	req, err := g.App.Service.Get(ctx, r.ID)
	if err != nil || len(req.Scopes) < 2 {
		t.Fatalf("scopes: %v %+v", err, req.Scopes)
	}
	wide := req.Scopes[len(req.Scopes)-1]
	flash := w.DecideWith(phone, url.Values{"id": {r.ID}, "decision": {"allow_always"},
		"scope_index": {strconv.Itoa(len(req.Scopes) - 1)}})
	if req, _ = g.App.Service.Get(ctx, r.ID); req.Status != approvals.StatusAllowed {
		t.Fatalf("allow always on %s: %q, %s", wide, flash, req.Status)
	}
	env := auditEnv(t, g)
	res := runCLI(ctx, env, "", "audit", "verify")
	if res.code != 0 || !strings.Contains(res.stdout, "request "+r.ID+": passkey signature ok\n") {
		t.Fatalf("audit verify: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	rows, err := g.App.Service.DB().QueryAudit(ctx, storage.AuditFilter{RequestID: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	var content string
	for _, row := range rows {
		if row.Event == storage.AuditDecision {
			content, _ = row.Detail[passkeys.KeyContent].(string)
		}
	}
	if !strings.Contains(content, `"scope":`+strconv.Quote(wide)) || !strings.Contains(content, `"v":2`) {
		t.Fatalf("the signed content does not carry the scope written (%s): %s", wide, content)
	}
	// The grant written is the one signed: its target and its agent.
	grant, err := g.App.Grants.Get(ctx, *req.GrantID)
	if err != nil {
		t.Fatal(err)
	}
	agent := grant.Agent
	if agent == "" {
		agent = passkeys.AnyAgent
	}
	if grant.Target != wide || !strings.Contains(content, `"grant_agent":`+strconv.Quote(agent)) {
		t.Fatalf("grant %+v is not the one signed: %s", grant, content)
	}
	edit := func(set string) {
		t.Helper()
		sql := `UPDATE audit SET detail = json_set(detail, ` + set + `) WHERE request_id = '` + r.ID + `' AND event = 'decision'`
		if out, err := exec.Command(sqlite3, "-cmd", ".timeout 10000", g.App.Config.Storage.Path, sql).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3: %v %s", err, out)
		}
	}
	for _, c := range []struct{ set, undo, want string }{
		{`'$.scope', '/'`, `'$.scope', '` + wide + `'`, `the signed scope "` + wide + `" is not the row's "/"`},
		{`'$.content', replace(json_extract(detail, '$.content'), '` + wide + `', '/')`,
			`'$.content', '` + strings.ReplaceAll(content, "'", "''") + `'`, "content_hash is not the SHA-256 of the content"},
		{`'$.passkey_user', 'ada'`, `'$.passkey_user', 'owner'`, "but the row names \"ada\""},
	} {
		edit(c.set)
		res := runCLI(ctx, env, "", "audit", "verify")
		if res.code != exitFail || !strings.Contains(res.stdout, "request "+r.ID+": passkey signature invalid: ") ||
			!strings.Contains(res.stdout, c.want) {
			t.Fatalf("audit verify after %s: exit %d, want %q\n%s%s", c.set, res.code, c.want, res.stdout, res.stderr)
		}
		edit(c.undo)
	}
	if res := runCLI(ctx, env, "", "audit", "verify"); !strings.Contains(res.stdout, "request "+r.ID+": passkey signature ok\n") {
		t.Fatalf("audit verify after undoing the edits:\n%s%s", res.stdout, res.stderr)
	}

	// A row signed before the grant was (content version 1: the content
	// ends at decision) still verifies, and verify says what it does not
	// prove; one signed for another relying party does not.
	resign := func(content, rpID string) {
		t.Helper()
		nonce := make([]byte, passkeys.NonceSize)
		nonce[0] = 1
		hash := passkeys.ContentHash([]byte(content))
		assertion, err := phone.Sign(phone.Credentials()[0], rpID,
			base64.RawURLEncoding.EncodeToString(passkeys.Challenge(hash, nonce)))
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Response struct{ ClientDataJSON, AuthenticatorData, Signature string }
		}
		if err := json.Unmarshal([]byte(assertion), &a); err != nil {
			t.Fatal(err)
		}
		q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		edit(`'$.content', ` + q(content) + `, '$.content_hash', ` + q(hash) + `, '$.challenge_nonce', ` +
			q(base64.RawURLEncoding.EncodeToString(nonce)) + `, '$.passkey_client_data_json', ` + q(a.Response.ClientDataJSON) +
			`, '$.passkey_authenticator_data', ` + q(a.Response.AuthenticatorData) + `, '$.passkey_signature', ` +
			q(a.Response.Signature) + `, '$.passkey_rp_id', ` + q(rpID))
	}
	v1 := content[:strings.Index(content, `,"scope":`)] + "}"
	resign(v1, "localhost")
	res = runCLI(ctx, env, "", "audit", "verify")
	if !strings.Contains(res.stdout, "request "+r.ID+": passkey signature ok ("+passkeys.NoteV1+")\n") {
		t.Fatalf("audit verify of a version 1 row:\n%s%s", res.stdout, res.stderr)
	}
	resign(content, "evil.example")
	res = runCLI(ctx, env, "", "audit", "verify")
	if res.code != exitFail || !strings.Contains(res.stdout, "request "+r.ID+": passkey signature invalid: the origin "+base+
		" is not a page of the relying party evil.example") {
		t.Fatalf("audit verify of another relying party's assertion: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
