package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/internal/testclock"
	"github.com/metnos/gateway/storage/storagetest"
	"github.com/metnos/gateway/web/push"
	"github.com/metnos/gateway/web/webtest"
)

// TestPush_OnePerDeviceAndUpdate: a pending request is pushed once to
// each device of every web user (no route names approvers), with the
// request's id as tag, its title, short target and expiry, and the two
// actions; no argument value. Allow once from one notification decides
// as that user; every device then gets the outcome, without actions. The
// token works once, its sibling and other users' tokens decide nothing.
func TestPush_OnePerDeviceAndUpdate(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			var edit func(*config.Config)
			if db == "postgres" {
				dsn := storagetest.FreshSchema(t) // skips, saying why, without a server
				edit = func(c *config.Config) { c.Storage.Driver, c.Storage.DSN = "postgres", dsn }
			}
			pushOnePerDevice(t, newPushGW(t, nil, edit))
		})
	}
}

func pushOnePerDevice(t *testing.T, g *pushGW) {
	anna, bob := g.user("anna"), g.user("bob")
	d1, d2 := g.subscribe(anna, "Chrome · Android"), g.subscribe(anna, "Firefox · Linux")
	d3 := g.subscribe(bob, "Chrome · Windows")

	r := g.ask(secretArgs("/tmp/inv/04.pdf"))
	got := map[string]push.Payload{}
	for range 3 {
		p, pl := g.next()
		if strings.Contains(string(p.Payload), "hunter2") || strings.Contains(string(p.Payload), webtest.AgentToken) {
			t.Fatalf("a push carries an argument value or a token: %s", p.Payload)
		}
		if p.Topic != r.ID || p.Urgency != "high" || p.TTL <= 0 || p.Subject != "mailto:admin@localhost" {
			t.Errorf("push headers: topic %q urgency %q ttl %d sub %q", p.Topic, p.Urgency, p.TTL, p.Subject)
		}
		if _, dup := got[p.Device]; dup {
			t.Fatalf("device %s pushed twice", p.Device)
		}
		got[p.Device] = pl
	}
	for _, d := range []string{d1.ID, d2.ID, d3.ID} {
		pl, ok := got[d]
		if !ok {
			t.Fatalf("device %s got no push: %v", d, got)
		}
		if pl.ID != r.ID || pl.Tag != r.ID || pl.URL != "/r/"+r.ID || pl.Status != "pending" ||
			pl.Title != "a1 wants fs:write" || pl.Target != "/tmp/inv/04.pdf" || pl.ExpiresAt == "" ||
			!strings.Contains(pl.Body, "/tmp/inv/04.pdf") {
			t.Errorf("payload: %+v", pl)
		}
		if len(pl.Actions) != 2 || pl.Actions[0].Action != "allow_once" || pl.Actions[0].Title != "Allow once" ||
			pl.Actions[1].Action != "deny" || pl.Actions[1].Title != "Deny" {
			t.Errorf("actions: %+v", pl.Actions)
		}
	}

	allow := tokenOf(t, got[d1.ID], "allow_once")
	if status, body := g.act(allow); status != http.StatusOK || !strings.Contains(body, `"status":"allowed"`) {
		t.Fatalf("Allow once from the notification: %d %s", status, body)
	}
	after := webtest.Fetch(t, g.base, r.ID)
	if after.Status != approvals.StatusAllowed || after.Decision == nil || *after.Decision != approvals.AllowOnce ||
		after.DecidedBy != "web:anna" {
		t.Fatalf("after the action: %s %v by %q", after.Status, after.Decision, after.DecidedBy)
	}
	for range 3 {
		_, pl := g.next()
		if pl.ID != r.ID || pl.Tag != r.ID || pl.Status != "allowed" || !strings.Contains(pl.Body, "Allowed once by anna") ||
			len(pl.Actions) != 0 {
			t.Errorf("update: %+v", pl)
		}
	}
	// Replayed, its sibling, and another user's for the decided request.
	if status, body := g.act(allow); status != http.StatusGone || !strings.Contains(body, "action_refused") {
		t.Errorf("replayed token: %d %s", status, body)
	}
	if status, body := g.act(tokenOf(t, got[d1.ID], "deny")); status != http.StatusGone {
		t.Errorf("the sibling Deny after Allow once: %d %s", status, body)
	}
	if status, body := g.act(tokenOf(t, got[d3.ID], "deny")); status != http.StatusConflict || !strings.Contains(body, "action_stale") {
		t.Errorf("bob's Deny after anna's allow: %d %s", status, body)
	}
	if status, _ := g.act("not-a-token"); status != http.StatusGone {
		t.Errorf("a made-up token: %d", status)
	}
	if final := webtest.Fetch(t, g.base, r.ID); final.DecidedBy != "web:anna" || *final.Decision != approvals.AllowOnce {
		t.Fatalf("a refused token changed the request: %+v", final)
	}
	// Nothing more was pushed for r: the next pushes are the next request's.
	r2 := g.ask(webtest.FSWrite("/tmp/inv/05.pdf"))
	for range 3 {
		if _, pl := g.next(); pl.ID != r2.ID {
			t.Fatalf("a push for %s after the update, want only %s's", pl.ID, r2.ID)
		}
	}
	if n := g.fake.Count(d1) + g.fake.Count(d2) + g.fake.Count(d3); n != 9 {
		t.Errorf("%d pushes, want 9 (3 devices × request, update, next request)", n)
	}
	g.metricIs(`gateway_push_deliveries_total{result="sent"}`, "9")
	if len(g.fake.Refused()) != 0 {
		t.Errorf("the push service refused: %v", g.fake.Refused())
	}
}

// TestPush_RoutesAndStepUp: a route naming web:anna pushes to her devices
// only; a step-up route's push has no actions, and its request is never
// decided by a token.
func TestPush_RoutesAndStepUp(t *testing.T) {
	g := newPushGW(t, nil, func(c *config.Config) {
		c.Approvals.Routes = []config.Route{
			{Capability: "code:exec", Approvers: []string{"web:anna"}, StepUp: config.StepUpPasskey, Quorum: 1},
			{Capability: "fs:write", Approvers: []string{"web:anna"}, Quorum: 1},
		}
	})
	anna, bob := g.user("anna"), g.user("bob")
	da, db := g.subscribe(anna, "Chrome · Android"), g.subscribe(bob, "Chrome · Windows")
	r := g.ask(webtest.FSWrite("/tmp/a.txt"))
	p, pl := g.next()
	if p.Device != da.ID || pl.ID != r.ID || len(pl.Actions) != 2 {
		t.Fatalf("fs:write push: to %s %+v", p.Device, pl)
	}
	s := g.ask(webtest.CodeExec("make deploy"))
	p, pl = g.next()
	if p.Device != da.ID || pl.ID != s.ID || len(pl.Actions) != 0 {
		t.Fatalf("step-up push: to %s %+v (want anna's, no actions)", p.Device, pl)
	}
	// A request every web user may decide reaches bob too: his device was
	// never pushed the two above.
	n := g.ask(map[string]any{"capability": "network:http", "target": "example.com", "intent": "fetch", "executor": "curl"})
	seen := map[string]bool{}
	for range 2 {
		p, pl := g.next()
		if pl.ID != n.ID {
			t.Fatalf("push for %s, want %s's", pl.ID, n.ID)
		}
		seen[p.Device] = true
	}
	if !seen[da.ID] || !seen[db.ID] || g.fake.Count(db) != 1 {
		t.Fatalf("network:http pushes: %v, bob's count %d", seen, g.fake.Count(db))
	}
}

var deviceRow = regexp.MustCompile(`id="device-([^"]+)">\s*<div><strong class="device-name">([^<]+)</strong>`)

// TestPush_TurnOff: the Account page lists each device; Turn off removes
// one, and it gets no push afterwards. Another user cannot turn it off.
func TestPush_TurnOff(t *testing.T) {
	g := newPushGW(t, nil, nil)
	anna, bob := g.user("anna"), g.user("bob")
	d1, d2 := g.subscribe(anna, "Chrome · Android"), g.subscribe(anna, "Firefox · Linux")
	page, _, csrf := g.account(anna)
	if !strings.Contains(page, "Turn on notifications") {
		t.Fatal("no Turn on notifications button on the Account page")
	}
	ids := map[string]string{}
	for _, m := range deviceRow.FindAllStringSubmatch(page, -1) {
		ids[m[2]] = m[1]
	}
	if len(ids) != 2 || !strings.Contains(page, "no push yet") {
		t.Fatalf("devices on the Account page: %v", ids)
	}
	// bob cannot turn off anna's device.
	_, _, bcsrf := g.account(bob)
	if _, body := webtest.PostForm(t, bob, g.base+"/web/push/unsubscribe", url.Values{"csrf": {bcsrf}, "id": {ids["Chrome · Android"]}}, nil); !strings.Contains(body, "not among yours") {
		t.Fatalf("bob turned off anna's device: %s", body)
	}
	if _, body := webtest.PostForm(t, anna, g.base+"/web/push/unsubscribe", url.Values{"csrf": {csrf}, "id": {ids["Chrome · Android"]}}, nil); !strings.Contains(body, "Notifications turned off") {
		t.Fatalf("Turn off: %s", body)
	}
	r := g.ask(webtest.FSWrite("/tmp/b.txt"))
	p, pl := g.next()
	if p.Device != d2.ID || pl.ID != r.ID {
		t.Fatalf("push to %s for %s; want only %s", p.Device, pl.ID, d2.ID)
	}
	r2 := g.ask(webtest.FSWrite("/tmp/c.txt"))
	if p, pl := g.next(); p.Device != d2.ID || pl.ID != r2.ID {
		t.Fatalf("push to %s for %s after Turn off", p.Device, pl.ID)
	}
	if g.fake.Count(d1) != 0 {
		t.Fatalf("the device turned off got %d pushes", g.fake.Count(d1))
	}
	page, _, _ = g.account(anna)
	if strings.Contains(page, "Chrome · Android") || !strings.Contains(page, "last push") {
		t.Fatalf("Account page after Turn off and a push:\n%s", page)
	}
}

// TestPush_RetriesGoneAndRestart: 429 (Retry-After) and 5xx are retried
// until the push goes through, once; a 410 removes the subscription; a
// push the gateway could not deliver before a restart is delivered after.
func TestPush_RetriesGoneAndRestart(t *testing.T) {
	g := newPushGW(t, nil, nil)
	anna := g.user("anna")
	d1 := g.subscribe(anna, "Chrome · Android")
	g.fake.Fail(1, http.StatusTooManyRequests, "1")
	g.fake.Fail(1, http.StatusServiceUnavailable, "")
	r := g.ask(webtest.FSWrite("/tmp/d.txt"))
	if p, pl := g.next(); p.Device != d1.ID || pl.ID != r.ID {
		t.Fatalf("push after 429 and 503: %s %s", p.Device, pl.ID)
	}
	if g.fake.Count(d1) != 1 {
		t.Fatalf("%d pushes after the retries, want 1", g.fake.Count(d1))
	}
	g.metricIs(`gateway_push_deliveries_total{result="rate_limited"}`, "1")
	g.metricIs(`gateway_push_deliveries_total{result="failed"}`, "1")

	// Gone: d1 answers 410 and is removed; d2, subscribed after it, still
	// gets its push (and tells us d1's attempt is over).
	d2 := g.subscribe(anna, "Firefox · Linux")
	g.fake.Gone(d1)
	r2 := g.ask(webtest.FSWrite("/tmp/e.txt"))
	if p, pl := g.next(); p.Device != d2.ID || pl.ID != r2.ID {
		t.Fatalf("push after a gone device: %s %s", p.Device, pl.ID)
	}
	page, _, _ := g.account(anna)
	if strings.Contains(page, "Chrome · Android") {
		t.Fatal("the gone device is still listed")
	}
	g.metricIs(`gateway_push_deliveries_total{result="gone"}`, "1")

	// Restart: the push service is down when the request arrives; the
	// gateway stops; after the restart, the push goes out once.
	g.recorded(r2.ID, d2)
	g.fake.Fail(1000, http.StatusInternalServerError, "")
	r3 := g.ask(webtest.FSWrite("/tmp/f.txt"))
	g.restart()
	g.fake.Heal()
	if p, pl := g.next(); p.Device != d2.ID || pl.ID != r3.ID {
		t.Fatalf("push after the restart: %s %s", p.Device, pl.ID)
	}
	r4 := g.ask(webtest.FSWrite("/tmp/g.txt"))
	if _, pl := g.next(); pl.ID != r4.ID {
		t.Fatalf("push %s, want %s (r3 pushed twice?)", pl.ID, r4.ID)
	}
	if len(g.fake.Refused()) != 0 {
		t.Errorf("the push service refused: %v", g.fake.Refused())
	}
}

// TestPush_ExpiredStaleAndExpiry: an action token past its short expiry
// decides nothing; one whose request was decided meanwhile on the page
// decides nothing; a request that expires is pushed its outcome.
func TestPush_ExpiredStaleAndExpiry(t *testing.T) {
	clock := testclock.New(time.Now()) // session cookies expire by it
	g := newPushGW(t, clock, nil)
	anna := g.user("anna")
	g.subscribe(anna, "Chrome · Android")

	r := g.ask(map[string]any{"capability": "fs:write", "target": "/tmp/h.txt", "intent": "save", "executor": "saver", "timeout_s": 3600})
	_, pl := g.next()
	clock.Add(push.ActionTTL + 1)
	if status, body := g.act(tokenOf(t, pl, "allow_once")); status != http.StatusGone {
		t.Fatalf("an expired token: %d %s", status, body)
	}
	if got := webtest.Fetch(t, g.base, r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("an expired token decided: %s", got.Status)
	}

	r2 := g.ask(webtest.FSWrite("/tmp/i.txt"))
	_, pl2 := g.next()
	page := webtest.Page(t, anna, g.base)
	if status, body := webtest.PostForm(t, anna, g.base+"/web/decide", url.Values{"csrf": {webtest.CSRF(t, page)}, "id": {r2.ID}, "decision": {"deny"}}, nil); status != http.StatusOK {
		t.Fatalf("deny on the page: %d %s", status, body)
	}
	if status, body := g.act(tokenOf(t, pl2, "allow_once")); status != http.StatusConflict {
		t.Fatalf("a token for a request denied meanwhile: %d %s", status, body)
	}
	if got := webtest.Fetch(t, g.base, r2.ID); got.Status != approvals.StatusDenied || got.DecidedBy != "web:anna" {
		t.Fatalf("after a stale token: %s by %s", got.Status, got.DecidedBy)
	}
	if _, upd := g.next(); upd.ID != r2.ID || upd.Status != "denied" || !strings.Contains(upd.Body, "Denied by anna") {
		t.Fatalf("update after the page's deny: %+v", upd)
	}

	clock.Add(2 * 3600e9)
	if _, err := g.app.Service.ExpireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, upd := g.next(); upd.ID != r.ID || upd.Status != "expired" || len(upd.Actions) != 0 {
		t.Fatalf("update on expiry: %+v", upd)
	}
}
