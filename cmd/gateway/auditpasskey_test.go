package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys/passkeystest"
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
