package slack_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/policy"
)

// TestSlack_ScopeChoice: the card has a scope select beside Allow always,
// the narrowest chosen; choosing another redraws the card so the button's
// confirm names it; a click whose select no longer matches its dialog, or
// whose scope is not on the request's list, is refused and decides
// nothing; the click that agrees writes the grant on the chosen scope.
func TestSlack_ScopeChoice(t *testing.T) {
	h := newHarness(t)
	agent := h.submit(fsWrite("/srv/reports/q1.txt"), "30s")
	id, ts, post := h.posted()
	blocks := post.Form.Get("blocks")
	for _, want := range []string{`"action_id":"approval_scope"`, `"/srv/reports/q1.txt"`, `"/srv/reports/*.txt"`,
		`"/srv/reports/*"`, `"value":"` + id + `:0"`} {
		wantContains(t, "card", blocks, want)
	}
	click := func(value string, state string) {
		t.Helper()
		a := slacktest.BlockAction{UserID: approverID, UserName: "roberto", ChannelID: channel, MessageTS: ts,
			BlockID: slack.SlackDecisionBlockID(id), ActionID: slack.SlackActionAllowAlways, Value: value,
			ResponseURL: h.fake.ResponseURL("click")}
		if state != "" {
			a.State = map[string]map[string]string{slack.SlackDecisionBlockID(id): {slack.SlackActionScope: state}}
		}
		if st, _ := h.signedPost("/slack/interactions", slacktest.InteractionBody(a.JSON()), time.Now(), secret); st != http.StatusOK {
			t.Fatalf("interaction answered %d", st)
		}
	}

	// The select says *, the dialog named the file: refused.
	click(id+":0", "2")
	wantContains(t, "refusal", h.fake.Wait(t, "chat.postEphemeral", waitFor).Text(), "scope changed")
	// A scope index past the list (a forged payload): refused.
	click(id+":9", "")
	wantContains(t, "refusal", h.fake.Wait(t, "chat.postEphemeral", waitFor).Text(), "not offered")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("refused clicks decided: %s", r.Status)
	}

	// Choosing "/srv/reports/*" redraws the card: the button and its dialog name it.
	sel := slacktest.BlockAction{UserID: approverID, UserName: "roberto", ChannelID: channel, MessageTS: ts,
		BlockID: slack.SlackDecisionBlockID(id), ActionID: slack.SlackActionScope, Selected: "2",
		ResponseURL: h.fake.ResponseURL("click")}
	if st, _ := h.signedPost("/slack/interactions", slacktest.InteractionBody(sel.JSON()), time.Now(), secret); st != http.StatusOK {
		t.Fatalf("select answered %d", st)
	}
	upd := h.fake.Wait(t, "chat.update", waitFor)
	wantContains(t, "redrawn card", upd.Form.Get("blocks"), `"value":"`+id+`:2"`)
	wantContains(t, "redrawn card", upd.Form.Get("blocks"), "Allow always grants fs:write on /srv/reports/* to")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("choosing a scope decided: %s", r.Status)
	}

	click(id+":2", "2")
	res := waitAgent(t, agent)
	if res.req.Status != approvals.StatusAllowed || res.req.GrantID == nil {
		t.Fatalf("agent got %+v", res.req)
	}
	g, err := h.app.Grants.Get(context.Background(), *res.req.GrantID)
	if err != nil || g.Target != "/srv/reports/*" {
		t.Fatalf("grant %+v, %v; want the chosen scope /srv/reports/*", g, err)
	}
	if strings.Contains(h.fake.Wait(t, "chat.update", waitFor).Form.Get("blocks"), "approval_scope") {
		t.Error("the finished card still has the scope select")
	}
}

// allowFor2s is approvals.allow_for = ["2s"].
func allowFor2s(s *setup) {
	s.cfg.Approvals.AllowFor = []config.Duration{config.Duration(2 * time.Second)}
}

// TestSlack_AllowFor: with allow_for = ["2s"] the card's "Allow for 2 s"
// writes a grant on the default scope ending 2 s after the click; it
// answers the same request at once, and once the gateway's clock has moved
// past it (not waited for) the same request is asked again.
func TestSlack_AllowFor(t *testing.T) {
	h := newHarness(t, allowFor2s)
	agent := h.submit(fsWrite("/srv/logs/app.log"), "30s")
	id, ts, post := h.posted()
	ids, _ := post.Buttons()
	if strings.Join(ids, ",") != "approval_allow_once,approval_allow_for_2s,approval_allow_always,approval_deny" {
		t.Fatalf("buttons %v", ids)
	}
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowFor+"2s"),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("click answered %d", st)
	}
	res := waitAgent(t, agent)
	if res.req.Status != approvals.StatusAllowed || res.req.Decision == nil || *res.req.Decision != approvals.AllowFor ||
		res.req.GrantID == nil {
		t.Fatalf("agent got %+v", res.req)
	}
	g, err := h.app.Grants.Get(context.Background(), *res.req.GrantID)
	if err != nil || g.Target != "/srv/logs/app.log" || g.ExpiresAt == nil || g.ExpiresAt.Sub(g.GrantedAt) != 2*time.Second {
		t.Fatalf("grant %+v, %v; want the file for 2 s", g, err)
	}
	wantContains(t, "decided card", h.fake.Wait(t, "chat.update", waitFor).Form.Get("blocks"), "Allowed for 2 s")
	if r := waitAgent(t, h.submit(fsWrite("/srv/logs/app.log"), "0s")); r.status != http.StatusOK || r.req.Status != approvals.StatusAllowed {
		t.Fatalf("within the while: %d %s", r.status, r.req.Status)
	}
	h.offset.Add(int64(2 * time.Second))
	if r := waitAgent(t, h.submit(fsWrite("/srv/logs/app.log"), "0s")); r.status != http.StatusAccepted || r.req.Status != approvals.StatusPending {
		t.Fatalf("after the while: %d %s, want asked again", r.status, r.req.Status)
	}
}

// TestSlack_AllowSession: a request naming its session gets "Allow this
// session"; the grant answers that session at once, a second session is
// asked again, and /approvals grants names the grant's agent and session.
func TestSlack_AllowSession(t *testing.T) {
	h := newHarness(t)
	inSession := func(session string) map[string]any {
		b := fsWrite("/srv/reports/q1.txt")
		b["session_id"] = session
		return b
	}
	agent := h.submit(inSession("s-1"), "30s")
	id, ts, post := h.posted()
	if ids, _ := post.Buttons(); !slices.Contains(ids, slack.SlackActionAllowSession) {
		t.Fatalf("buttons %v, want Allow this session", ids)
	}
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowSession),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("click answered %d", st)
	}
	res := waitAgent(t, agent)
	if res.req.Status != approvals.StatusAllowed || res.req.GrantID == nil {
		t.Fatalf("agent got %+v", res.req)
	}
	g, err := h.app.Grants.Get(context.Background(), *res.req.GrantID)
	if err != nil || g.Agent != "a1" || g.SessionID != "s-1" || g.Target != "/srv/reports/q1.txt" {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if r := waitAgent(t, h.submit(inSession("s-1"), "0s")); r.status != http.StatusOK || r.req.Status != approvals.StatusAllowed {
		t.Fatalf("same session: %d %s", r.status, r.req.Status)
	}
	if r := waitAgent(t, h.submit(inSession("s-2"), "0s")); r.status != http.StatusAccepted || r.req.Status != approvals.StatusPending {
		t.Fatalf("second session: %d %s, want asked again", r.status, r.req.Status)
	}
	wantContains(t, "/approvals grants", h.say(approverID, "grants"), "only agent `a1`, session `s-1`")
}

// TestSlack_NoWhileOrSessionForAlwaysCapabilities (seed 000): code:exec
// and mail:send cards have only Allow once and Deny, even for a request
// with a session and allow_for configured; forged clicks of the other
// buttons are refused, decide nothing and write no grant.
func TestSlack_NoWhileOrSessionForAlwaysCapabilities(t *testing.T) {
	h := newHarness(t, allowFor2s)
	for _, c := range []struct{ capability, target string }{{"code:exec", "npm test"}, {"mail:send", "boss@example.com"}} {
		h.submit(map[string]any{"capability": c.capability, "target": c.target, "session_id": "s-1",
			"intent": "x", "executor": "x"}, "0s")
		id, ts, post := h.posted()
		if ids, _ := post.Buttons(); strings.Join(ids, ",") != "approval_allow_once,approval_deny" {
			t.Errorf("%s buttons %v, want Allow once and Deny only", c.capability, ids)
		}
		for _, action := range []string{slack.SlackActionAllowFor + "2s", slack.SlackActionAllowSession} {
			if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, action),
				time.Now(), secret); st != http.StatusOK {
				t.Fatalf("click answered %d", st)
			}
			h.fake.Wait(t, "chat.postEphemeral", waitFor)
		}
		if r := h.get(id); r.Status != approvals.StatusPending {
			t.Errorf("%s: forged clicks decided: %s", c.capability, r.Status)
		}
	}
	if gs, err := h.app.Grants.List(context.Background(), policy.GrantFilter{All: true}); err != nil || len(gs) != 0 {
		t.Fatalf("grants for code:exec / mail:send: %+v, %v", gs, err)
	}
}
