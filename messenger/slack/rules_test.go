package slack_test

import (
	"context"
	"testing"

	"github.com/metnos/gateway/policy"
)

// TestCommands_Rules: /approvals rules lists every rule with its source
// for slack.admins (nobody else), and rules rm removes a run-time one,
// never the file's.
func TestCommands_Rules(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	ri, err := h.app.Rules.Add(ctx, policy.NewRule{Capability: "fs:write", Target: "/srv/**", Action: policy.ActionBlock,
		SenderID: "owner"}, "api:admin")
	if err != nil {
		t.Fatal(err)
	}
	got := h.say(adminID, "rules")
	for _, w := range []string{"Rules (", "*block* fs:write on `/srv/**`", "sender owner", "`" + ri.ID + "` by api:admin"} {
		wantContains(t, "rules", got, w)
	}
	wantContains(t, "refused to approvers", h.say("U0OTHER", "rules"), "slack.admins")
	wantContains(t, "refused to strangers", h.say(strangerID, "rules rm "+ri.ID), "slack.admins")
	wantContains(t, "help", h.say(strangerID, "help"), "/approvals rules")
	wantContains(t, "usage", h.say(adminID, "rules add x"), "Usage: `/approvals rules`")
	if list, _ := h.app.Rules.List(ctx); len(list) == 0 || list[0].ID != ri.ID {
		t.Fatalf("rule gone after refused commands: %+v", list)
	}
	wantContains(t, "rm", h.say(adminID, "rules rm "+ri.ID), "Removed rule `"+ri.ID+"`")
	wantContains(t, "rm again", h.say(adminID, "rules rm "+ri.ID), "There is no rule")
	if list, _ := h.app.Rules.List(ctx); len(list) > 0 && list[0].ID == ri.ID {
		t.Fatalf("rule still listed: %+v", list)
	}
}
