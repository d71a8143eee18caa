package slack_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/metnos/gateway/approvals"
)

// TestCommands_Audit: /approvals audit answers slack.admins (nobody else),
// privately, with the last rows of the trail: all of it, one request's,
// one person's (a Slack mention) or one agent's.
func TestCommands_Audit(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	res := waitAgent(t, h.submit(fsWrite("/srv/audit/a.txt"), "0s"))
	if res.status != http.StatusAccepted {
		t.Fatalf("submit: %d", res.status)
	}
	id := res.req.ID
	if _, err := h.app.Service.Decide(ctx, id, approvals.Deny,
		approvals.Actor{Channel: "slack", ID: approverID, Name: "roberto"}); err != nil {
		t.Fatal(err)
	}
	all := h.say(adminID, "audit")
	for _, w := range []string{"*The last ", "audit rows for everything* (oldest first)", "*chain_genesis*", "*outcome* by agent:a1",
		"*decision* by slack:roberto (" + approverID + ")", "decision deny", "request " + id, "JST"} {
		wantContains(t, "audit", all, w)
	}
	one := h.say(adminID, "audit "+id)
	wantContains(t, "audit request", one, "The last 2 audit rows for request "+id)
	wantContains(t, "audit person", h.say(approverID, "audit <@"+approverID+"|roberto>"), "The last 1 audit rows for @roberto")
	wantContains(t, "audit agent", h.say(adminID, "audit a1"), "for agent a1")
	wantContains(t, "audit nothing", h.say(adminID, "audit nobody-at-all"), "No audit rows for nobody-at-all.")
	wantContains(t, "usage", h.say(adminID, "audit a b"), "Usage: `/approvals audit")
	wantContains(t, "refused to strangers", h.say(strangerID, "audit"), "slack.admins")
	wantContains(t, "help", h.say(strangerID, "help"), "/approvals audit")
}
