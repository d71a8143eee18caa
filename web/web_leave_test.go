package web_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/storage/storagetest"
	"github.com/metnos/gateway/web/webtest"
)

// servedApp is a gateway serving on a loopback port (App.Serve: what a
// start does), at http://localhost:<port>.
type servedApp struct {
	app  *gateway.App
	base string
	stop func()
}

// serveApp starts a gateway on cfg (gatewaytest), with users as its
// [[web.users]]; stop ends its serving (its App is closed when the test
// ends).
func serveApp(t *testing.T, cfg config.Config, users ...string) *servedApp {
	t.Helper()
	cfg.Web.Users = nil
	for _, u := range users {
		cfg.Web.Users = append(cfg.Web.Users, config.WebUser{Name: u})
	}
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Home: t.TempDir()})
	return &servedApp{app: g.App, base: strings.Replace(g.URL, "http://127.0.0.1:", "http://localhost:", 1), stop: g.Stop}
}

// TestWeb_RemovedUserLeaves: a web user removed from [[web.users]] and a
// restart later has no session and no usable login link, on SQLite and on
// PostgreSQL: the cookie they hold is refused with a page that says why,
// as is a link minted for them before; a replica still on the old config
// refuses them too (the start ended their sessions in the database). The
// users who stay keep their sessions.
func TestWeb_RemovedUserLeaves(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			cfg := config.Default()
			cfg.Storage.Path = filepath.Join(t.TempDir(), "gateway.db")
			if db == "postgres" {
				cfg.Storage.Driver, cfg.Storage.DSN = "postgres", storagetest.FreshSchema(t)
			}
			a := config.NewAgent("a1")
			a.Token = webtest.AgentToken
			cfg.Agents = []config.Agent{a}

			before := serveApp(t, cfg, "owner", "ada")
			owner, ada := webtest.BrowserClient(t), webtest.BrowserClient(t)
			webtest.Login(t, before.app, owner, before.base, "owner")
			webtest.Login(t, before.app, ada, before.base, "ada")
			adaLink := webtest.LoginLink(t, before.app, before.base, "ada")
			var old *servedApp
			if db == "postgres" {
				old = serveApp(t, cfg, "owner", "ada") // another replica, on the old config
			}
			before.stop()

			after := serveApp(t, cfg, "owner")
			adaLink = strings.Replace(adaLink, before.base, after.base, 1)
			for _, c := range []struct {
				name string
				get  func() (int, string)
			}{
				{"ada's cookie", func() (int, string) { return webtest.GetPath(t, ada, after.base+"/") }},
				{"ada's login link", func() (int, string) { return webtest.GetPath(t, webtest.BrowserClient(t), adaLink) }},
			} {
				status, page := c.get()
				if status != http.StatusForbidden || !strings.Contains(page, "ada is no longer a web user of this gateway") {
					t.Errorf("%s after the restart: %d\n%s", c.name, status, page)
				}
			}
			if status, page := webtest.GetPath(t, ada, after.base+"/"); status != http.StatusOK || !strings.Contains(page, `action="/login`) {
				t.Errorf("ada's second visit: %d, want the login page\n%s", status, page)
			}
			if status, page := webtest.GetPath(t, owner, after.base+"/"); status != http.StatusOK || !strings.Contains(page, "csrf") ||
				strings.Contains(page, `action="/login`) {
				t.Errorf("owner's session after the restart: %d\n%s", status, page)
			}
			if old != nil {
				// The replica that still lists ada: her session was ended in
				// the database, and her link spent.
				status, page := webtest.GetPath(t, ada, old.base+"/")
				if status != http.StatusOK || !strings.Contains(page, `action="/login`) {
					t.Errorf("ada's old cookie on the replica with the old config: %d\n%s", status, page)
				}
			}
		})
	}
}
