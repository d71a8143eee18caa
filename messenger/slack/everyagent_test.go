package slack_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
)

// TestSlack_EveryAgentScope: the scope select also lists each scope "for
// every agent" (values "e<i>"), never chosen by default; choosing one
// redraws the card so the button and its dialog say so, and the click
// that agrees writes a grant for every agent of the principal; a click
// whose select says otherwise is refused.
func TestSlack_EveryAgentScope(t *testing.T) {
	h := newHarness(t)
	agent := h.submit(fsWrite("/srv/reports/q1.txt"), "30s")
	id, ts, post := h.posted()
	wantContains(t, "card", post.Form.Get("blocks"), `"value":"e2"`)
	wantContains(t, "card", post.Form.Get("blocks"), `"value":"`+id+`:0"`)
	sel := slacktest.BlockAction{UserID: approverID, UserName: "roberto", ChannelID: channel, MessageTS: ts,
		BlockID: slack.SlackDecisionBlockID(id), ActionID: slack.SlackActionScope, Selected: "e2",
		ResponseURL: h.fake.ResponseURL("click")}
	if st, _ := h.signedPost("/slack/interactions", slacktest.InteractionBody(sel.JSON()), time.Now(), secret); st != http.StatusOK {
		t.Fatalf("select answered %d", st)
	}
	upd := h.fake.Wait(t, "chat.update", waitFor)
	wantContains(t, "redrawn card", upd.Form.Get("blocks"), `"value":"`+id+`:e2"`)
	wantContains(t, "redrawn card", upd.Form.Get("blocks"), "for every agent of this principal")
	click := func(value, state string) {
		t.Helper()
		a := slacktest.BlockAction{UserID: approverID, UserName: "roberto", ChannelID: channel, MessageTS: ts,
			BlockID: slack.SlackDecisionBlockID(id), ActionID: slack.SlackActionAllowAlways, Value: value,
			ResponseURL: h.fake.ResponseURL("click"),
			State:       map[string]map[string]string{slack.SlackDecisionBlockID(id): {slack.SlackActionScope: state}}}
		if st, _ := h.signedPost("/slack/interactions", slacktest.InteractionBody(a.JSON()), time.Now(), secret); st != http.StatusOK {
			t.Fatalf("interaction answered %d", st)
		}
	}
	click(id+":e2", "2") // the select went back to the agent's own scope
	wantContains(t, "refusal", h.fake.Wait(t, "chat.postEphemeral", waitFor).Text(), "scope changed")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("a refused click decided: %s", r.Status)
	}
	click(id+":e2", "e2")
	res := waitAgent(t, agent)
	if res.req.Status != approvals.StatusAllowed || res.req.GrantID == nil {
		t.Fatalf("agent got %+v", res.req)
	}
	g, err := h.app.Grants.Get(context.Background(), *res.req.GrantID)
	if err != nil || g.Target != "/srv/reports/*" || g.Agent != "" {
		t.Fatalf("grant %+v, %v; want /srv/reports/* for every agent", g, err)
	}
}
