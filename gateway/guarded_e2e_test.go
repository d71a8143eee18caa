package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/passkeys/passkeystest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web/webtest"
)

// The end-to-end tests of guarded routes (issue 38): a route with a
// quorum of 2 and passkeys keeps that promise against every shortcut one
// layer up, while its own decisions' grants still apply.

const gdOtherToken = "agent-token-other-0123456"

// guardedRoute is route 1 of newGuardedGW: a1's fs:write needs owner and
// roberto, each with a passkey.
const guardedLabel = "route 1: quorum 2, passkey"

// newGuardedGW is a gateway with three web users (owner the admin,
// roberto and eve approvers), agents a1 (on the guarded route), a2 (the
// same principal, web/owner, on no route) and the admin agent boss.
func newGuardedGW(t *testing.T) *routesGW {
	return newChatGW(t, func(c *config.Config) {
		c.Web.Users = []config.WebUser{{Name: "owner"}, {Name: "roberto"}, {Name: "eve"}}
		a2 := config.NewAgent("a2")
		a2.Token, a2.Notify = gdOtherToken, []string{"web"}
		c.Agents = append(c.Agents, a2)
		c.Approvals.Routes = []config.Route{{Capability: "fs:write", Agent: "a1", Notify: []string{"web"},
			Approvers: []string{"web:owner", "web:roberto"}, Quorum: 2, StepUp: config.StepUpPasskey}}
	})
}

// askAs posts a request with token and returns it as first answered
// (pending, or decided at once).
func (g *routesGW) askAs(token, capability, target, callID string) approvals.Request {
	g.t.Helper()
	st, b := g.call("POST", "/v1/requests", token, map[string]any{
		"capability": capability, "target": target, "intent": "deploy the app", "call_id": callID})
	var r approvals.Request
	if err := json.Unmarshal(b, &r); err != nil || st >= 300 {
		g.t.Fatalf("ask %s %q as %s: %d %s", capability, target, callID, st, b)
	}
	return r
}

func traceText(r approvals.Request) string {
	var b strings.Builder
	for _, s := range r.Trace {
		b.WriteString(s.Layer + ": " + s.Detail + "\n")
	}
	return b.String()
}

// TestGuardedRoute_NoShortcuts: on a route with quorum 2 and passkeys,
//   - another agent's Allow always (for itself, then for every agent) does
//     not lift a1's request;
//   - an approve rule added by the admin agent over the API, and one added
//     by the admin on the page, do not: both are told "does not apply to
//     requests on route 1: quorum 2, passkey";
//   - a grant added by the admin agent does not (and says so);
//   - an approver-role user cannot add a rule or revoke a grant;
//   - the trace says why;
//   - the route's own Allow always (two passkeys, in Chromium with the
//     virtual authenticator) writes a grant that carries the route, and it
//     lifts a1's next request;
//   - the admin agent cannot decide its own request (403 own_request);
//   - an agent's GET /v1/grants shows no other agent's grant.
func TestGuardedRoute_NoShortcuts(t *testing.T) {
	chromium := webtest.Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := newGuardedGW(t)
	base := g.pageBase()
	const target = "/srv/deploy/app.tar"

	// Another agent of the same principal: its Allow always is its own.
	other := g.askAs(gdOtherToken, "fs:write", target, "a2-1")
	if other.Status != approvals.StatusPending {
		t.Fatalf("a2's request is %s, want pending", other.Status)
	}
	ownerPage := passkeystest.Login(t, base, webtest.LoginLink(t, g.app, base, "owner"))
	if _, page := ownerPage.Post("/web/decide", url.Values{"id": {other.ID}, "decision": {"allow_always"}}); !strings.Contains(page, "Allowed always") {
		t.Fatalf("the owner's Allow always of a2's request: %s", page)
	}
	got, err := g.app.Service.Get(ctx, other.ID)
	if err != nil || got.GrantID == nil {
		t.Fatalf("a2's request: %v %+v", err, got)
	}
	a2Grant := *got.GrantID
	// The admin agent's Allow always for every agent, on another of a2's requests.
	other2 := g.askAs(gdOtherToken, "fs:write", "/srv/deploy/other.tar", "a2-2")
	st, body := g.call("POST", "/v1/requests/"+other2.ID+"/decision", rtAdminToken,
		map[string]any{"decision": "allow_always", "every_agent": true})
	if st != http.StatusOK {
		t.Fatalf("boss's Allow always for every agent: %d %s", st, body)
	}
	var everyReq approvals.Request
	_ = json.Unmarshal(body, &everyReq)
	// On the page, "for every agent" is a choice ticked on the card.
	other3 := g.askAs(gdOtherToken, "fs:write", "/srv/deploy/third.tar", "a2-3")
	if _, page := ownerPage.Post("/web/decide", url.Values{"id": {other3.ID}, "decision": {"allow_always"},
		"every_agent": {"1"}}); !strings.Contains(webtest.Flash(page), "Allowed always") {
		t.Fatalf("the owner's Allow always for every agent: %q", webtest.Flash(page))
	}
	if r, err := g.app.Service.Get(ctx, other3.ID); err != nil || r.GrantID == nil {
		t.Fatalf("a2's third request: %v %+v", err, r)
	} else if gr, err := g.app.Grants.Get(ctx, *r.GrantID); err != nil || gr.Agent != "" {
		t.Fatalf("the page's grant for every agent: %v %+v", err, gr)
	} else if _, err := g.app.Grants.Revoke(ctx, gr.ID, "test", "test"); err != nil {
		t.Fatal(err)
	}
	// Its grant is for every agent; a2's first one is a2's only.
	grants, err := g.app.Grants.List(ctx, policy.GrantFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range grants {
		if !gr.Active {
			continue
		}
		want := "a2"
		if everyReq.GrantID != nil && gr.ID == *everyReq.GrantID {
			want = ""
		}
		if gr.Agent != want || gr.Route != "" {
			t.Errorf("grant #%d is for agent %q route %q, want %q and none", gr.ID, gr.Agent, gr.Route, want)
		}
	}

	// The admin agent's approve rule and grant, and the admin's rule on the page.
	st, body = g.call("POST", "/v1/policy/rules", rtAdminToken, map[string]any{
		"capability": "fs:write", "target": "/srv/deploy/**", "action": "approve"})
	if st != http.StatusCreated || !strings.Contains(string(body), "does not apply to requests on "+guardedLabel) {
		t.Fatalf("boss's approve rule: %d %s, want it told it does not apply on %s", st, body, guardedLabel)
	}
	if _, page := ownerPage.Post("/web/rules/add", url.Values{"capability": {"fs:*"}, "target": {"/srv/**"},
		"action": {"approve"}, "position": {"top"}}); !strings.Contains(page, "does not apply to requests on "+guardedLabel) {
		t.Fatalf("the admin's approve rule on the page: the flash does not say it does not apply:\n%s", webtest.Flash(page))
	}
	st, body = g.call("POST", "/v1/grants", rtAdminToken, map[string]any{
		"channel": "web", "sender_id": "owner", "capability": "fs:write", "target": "/srv/deploy/*"})
	if st != http.StatusCreated || !strings.Contains(string(body), "does not apply to requests on "+guardedLabel) {
		t.Fatalf("boss's grant: %d %s, want it told it does not apply on %s", st, body, guardedLabel)
	}

	// An approver cannot add a rule, nor revoke a grant.
	eve := passkeystest.Login(t, base, webtest.LoginLink(t, g.app, base, "eve"))
	rulesBefore, _ := g.app.Server.Rules().List(ctx)
	_, page := eve.Post("/web/rules/add", url.Values{"capability": {"fs:write"}, "target": {"*"},
		"action": {"block"}, "position": {"top"}})
	if !strings.Contains(webtest.Flash(page), "Only an admin") {
		t.Errorf("eve's rule: the flash says %q", webtest.Flash(page))
	}
	// The page she is back on offers her no rule form and no Revoke.
	if strings.Contains(page, `id="add-rule"`) || strings.Contains(page, `action="/web/revoke"`) {
		t.Error("eve's page offers the add-rule form or Revoke")
	}
	if _, page := eve.Post("/web/revoke", url.Values{"id": {jsonNum(a2Grant)}}); !strings.Contains(webtest.Flash(page), "Only an admin") {
		t.Errorf("eve's revoke: the flash says %q", webtest.Flash(page))
	}
	if rulesAfter, _ := g.app.Server.Rules().List(ctx); len(rulesAfter) != len(rulesBefore) {
		t.Errorf("eve's post changed the rules: %d, then %d", len(rulesBefore), len(rulesAfter))
	}
	if gr, err := g.app.Grants.Get(ctx, a2Grant); err != nil || !gr.Active {
		t.Errorf("eve's revoke revoked grant #%d: %v %+v", a2Grant, err, gr)
	}

	// a1's request: no rule, no grant, no other agent's Allow always lifts it.
	r := g.askAs(rtAgentToken, "fs:write", target, "a1-1")
	if r.Status != approvals.StatusPending {
		t.Fatalf("a1's request on the guarded route is %s (%s), want pending; trace:\n%s", r.Status, r.Reason, traceText(r))
	}
	tr := traceText(r)
	wantIn(t, "a1's trace", tr, "does not apply to requests on "+guardedLabel)
	wantIn(t, "a1's trace", tr, "no active grant of "+guardedLabel)
	// The same request through /v1/check says the same.
	st, body = g.call("POST", "/v1/check", rtAgentToken, map[string]any{"capability": "fs:write", "target": target})
	if st != http.StatusOK || !strings.Contains(string(body), `"approval_required"`) {
		t.Errorf("a1's check: %d %s, want approval_required", st, body)
	}

	// a1's grants list shows its own and every agent's, never a2's.
	st, body = g.call("GET", "/v1/grants", rtAgentToken, nil)
	var list struct{ Grants []policy.Grant }
	if err := json.Unmarshal(body, &list); err != nil || st != http.StatusOK {
		t.Fatalf("a1's grants: %d %s", st, body)
	}
	for _, gr := range list.Grants {
		if gr.Agent != "" && gr.Agent != "a1" {
			t.Errorf("a1 sees grant #%d of agent %s", gr.ID, gr.Agent)
		}
	}
	if len(list.Grants) != 2 { // boss's Allow always for every agent, boss's added grant
		t.Errorf("a1 sees %d grants, want 2: %+v", len(list.Grants), list.Grants)
	}

	// Its card offers no grant for every agent, and the choice is refused.
	if _, page := ownerPage.Post("/web/decide", url.Values{"id": {r.ID}, "decision": {"allow_always"},
		"every_agent": {"1"}}); !strings.Contains(webtest.Flash(page), "not offered") && !strings.Contains(webtest.Flash(page), "passkey") {
		t.Errorf("every agent on the guarded route: the flash says %q", webtest.Flash(page))
	}
	stillPending(t, g, r.ID, "an Allow always for every agent on the guarded route")

	// The route's own way: two passkeys, each Allow always.
	owner, _ := webtest.PasskeyBrowser(t, ctx, chromium, g.app, base, "owner", "Pixel")
	roberto, _ := webtest.PasskeyBrowser(t, ctx, chromium, g.app, base, "roberto", "iPhone")
	for i, b := range []context.Context{owner, roberto} {
		if err := chromedp.Do(b, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#req-"+r.ID))); err != nil {
			t.Fatal(err)
		}
		offered, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector("#req-`+r.ID+` input[name=every_agent]") !== null`))
		if err != nil || offered {
			t.Errorf("the guarded request's card offers a grant for every agent (%v)", err)
		}
		c := captureAssertion(t, b, r.ID, "allow_always")
		flash := postAssertion(t, b, c.Ceremony, c.Credential, c.CSRF)
		if want := []string{"1 of 2", "Allowed always"}[i]; !strings.Contains(flash, want) {
			t.Fatalf("allow %d of 2 with a passkey: the page says %q, want %q", i+1, flash, want)
		}
	}
	done, err := g.app.Service.Get(ctx, r.ID)
	if err != nil || done.Status != approvals.StatusAllowed || done.GrantID == nil {
		t.Fatalf("a1's request after two passkeys: %v %s grant %v", err, done.Status, done.GrantID)
	}
	routeGrant, err := g.app.Grants.Get(ctx, *done.GrantID)
	if err != nil || routeGrant.Agent != "a1" || !strings.HasPrefix(routeGrant.Route, "1:") {
		t.Fatalf("the route's grant: %v %+v, want a1's carrying route 1", err, routeGrant)
	}
	// It lifts a1's next request on that target.
	next := g.askAs(rtAgentToken, "fs:write", target, "a1-2")
	if next.Status != approvals.StatusAllowed || next.GrantID == nil || *next.GrantID != routeGrant.ID {
		t.Fatalf("a1's next request is %s (%s), want allowed by grant #%d; trace:\n%s",
			next.Status, next.Reason, routeGrant.ID, traceText(next))
	}
	// A target it does not cover still needs the route.
	if r := g.askAs(rtAgentToken, "fs:write", "/srv/deploy/b.tar", "a1-3"); r.Status != approvals.StatusPending {
		t.Fatalf("a1's request for another target is %s (%s), want pending", r.Status, r.Reason)
	}

	// The admin agent cannot decide its own request, not even deny it.
	own := g.askAs(rtAdminToken, "fs:write", "/opt/boss/own.txt", "boss-1")
	if own.Status != approvals.StatusPending {
		t.Fatalf("boss's request is %s, want pending", own.Status)
	}
	for _, d := range []string{"allow_once", "deny"} {
		st, body := g.call("POST", "/v1/requests/"+own.ID+"/decision", rtAdminToken, map[string]any{"decision": d})
		if st != http.StatusForbidden || !strings.Contains(string(body), `"own_request"`) {
			t.Errorf("boss's %s of its own request: %d %s, want 403 own_request", d, st, body)
		}
	}
	stillPending(t, g, own.ID, "the admin agent's decisions of its own request")
}

func jsonNum(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
