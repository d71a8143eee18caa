package slack_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/gateway/slack/slacktest"
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
			BlockID: cards.SlackDecisionBlockID(id), ActionID: cards.SlackActionAllowAlways, Value: value,
			ResponseURL: h.fake.ResponseURL("click")}
		if state != "" {
			a.State = map[string]map[string]string{cards.SlackDecisionBlockID(id): {cards.SlackActionScope: state}}
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
		BlockID: cards.SlackDecisionBlockID(id), ActionID: cards.SlackActionScope, Selected: "2",
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
