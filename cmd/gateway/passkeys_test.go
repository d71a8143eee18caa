package main

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/storage"
)

// TestPasskeysCLI_ListRemoveLogout: `gateway passkeys list` shows every
// user's passkeys, `passkeys remove ID` removes one (an audit row, and it
// signs nobody in any more); `gateway logout --user NAME` ends that user's
// sessions only and removes their passkeys; `gateway logout --all` ends
// every session and removes every passkey, so none an intruder added is
// left as a way back (`--keep-passkeys` keeps them).
func TestPasskeysCLI_ListRemoveLogout(t *testing.T) {
	g := startLive(t, func(c *config.Config) {
		c.Web.Users = []config.WebUser{{Name: "owner"}, {Name: "ada"}}
	})
	ctx := context.Background()
	base := strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1)
	login := func(user string) *passkeystest.Web {
		link, _, err := g.App.LoginLink(ctx, base, user)
		if err != nil {
			t.Fatal(err)
		}
		return passkeystest.Login(t, base, link)
	}
	owner, ada := login("owner"), login("ada")
	owner.Register(&passkeystest.Authenticator{Origin: base}, "iPhone")
	owner.Register(&passkeystest.Authenticator{Origin: base}, "MacBook")
	ada.Register(&passkeystest.Authenticator{Origin: base}, "YubiKey")
	env := auditEnv(t, g)

	res := runCLI(ctx, env, "", "passkeys", "list")
	if res.code != 0 || strings.Count(res.stdout, "\n") != 3 || !strings.Contains(res.stdout, "\towner\tiPhone\tadded ") ||
		!strings.Contains(res.stdout, "\tada\tYubiKey\t") {
		t.Fatalf("passkeys list: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	keys := passkeys.New(g.App.Service.DB(), nil)
	list, _ := keys.List(ctx, "owner")
	id := strconv.FormatInt(list[0].ID, 10)
	if res := runCLI(ctx, env, "", "passkeys", "remove", id); res.code != 0 || !strings.Contains(res.stdout, "Removed passkey "+id+" 'iPhone' of owner") {
		t.Fatalf("passkeys remove: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := runCLI(ctx, env, "", "passkeys", "remove", id); res.code != exitFail || !strings.Contains(res.stderr, "no passkey "+id+" in use") {
		t.Errorf("passkeys remove twice: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := runCLI(ctx, env, "", "passkeys", "list", "--user", "owner"); strings.Contains(res.stdout, "iPhone") || !strings.Contains(res.stdout, "MacBook") {
		t.Errorf("passkeys list --user owner after the remove:\n%s", res.stdout)
	}

	res = runCLI(ctx, env, "", "logout", "--user", "ada")
	if res.code != 0 || !strings.Contains(res.stdout, "Ended 1 web sessions of ada") || !strings.Contains(res.stdout, "'YubiKey' of ada") {
		t.Fatalf("logout --user ada: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if st, _ := ada.Post("/web/passkeys/begin", url.Values{}); st != http.StatusUnauthorized {
		t.Errorf("ada's session after logout --user ada: %d", st)
	}
	if st, _ := owner.Post("/web/passkeys/begin", url.Values{}); st != http.StatusOK {
		t.Errorf("owner's session after logout --user ada: %d", st)
	}
	if res := runCLI(ctx, env, "", "logout", "--all", "--keep-passkeys"); res.code != 0 || strings.Contains(res.stdout, "Removed") {
		t.Fatalf("logout --all --keep-passkeys: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if list, _ := keys.All(ctx); len(list) != 1 {
		t.Fatalf("--keep-passkeys removed some: %+v", list)
	}
	login("owner") // a session for logout --all to end
	res = runCLI(ctx, env, "", "logout", "--all")
	if res.code != 0 || !strings.Contains(res.stdout, "'MacBook' of owner") || !strings.Contains(res.stdout, "Removed 1 passkeys") {
		t.Fatalf("logout --all: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if list, _ := keys.All(ctx); len(list) != 0 {
		t.Fatalf("passkeys left after logout --all: %+v", list)
	}
	if res := runCLI(ctx, env, "", "logout"); res.code != exitUsage {
		t.Errorf("logout with neither flag: exit %d", res.code)
	}
	rows, err := storage.ListAudit(ctx, g.App.Service.DB(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range rows {
		n[r.Event+" "+r.Actor]++
	}
	if n["passkey_added web:owner"] != 2 || n["passkey_added web:ada"] != 1 || n["passkey_removed cli"] != 3 || n["sessions_ended cli"] != 3 {
		t.Errorf("audit rows: %v", n)
	}
	if res := runCLI(ctx, env, "", "audit", "verify"); res.code != 0 {
		t.Errorf("audit verify: exit %d\n%s", res.code, res.stdout)
	}
}
