package slack_test

import (
	"context"
	"net/http"
	"testing"
	"time"

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
	say := func(user, text string) string {
		t.Helper()
		if st, _ := h.signedPost("/slack/commands", h.command(user, text), time.Now(), secret); st != http.StatusOK {
			t.Fatalf("answered %d", st)
		}
		return h.answer("response_url")
	}
	got := say(adminID, "rules")
	for _, w := range []string{"Rules (", "*block* fs:write on `/srv/**`", "sender owner", "`" + ri.ID + "` by api:admin"} {
		wantContains(t, "rules", got, w)
	}
	wantContains(t, "refused to approvers", say("U0OTHER", "rules"), "slack.admins")
	wantContains(t, "refused to strangers", say(strangerID, "rules rm "+ri.ID), "slack.admins")
	wantContains(t, "help", say(strangerID, "help"), "/approvals rules")
	wantContains(t, "usage", say(adminID, "rules add x"), "Usage: `/approvals rules`")
	if list, _ := h.app.Rules.List(ctx); len(list) == 0 || list[0].ID != ri.ID {
		t.Fatalf("rule gone after refused commands: %+v", list)
	}
	wantContains(t, "rm", say(adminID, "rules rm "+ri.ID), "Removed rule `"+ri.ID+"`")
	wantContains(t, "rm again", say(adminID, "rules rm "+ri.ID), "There is no rule")
	if list, _ := h.app.Rules.List(ctx); len(list) > 0 && list[0].ID == ri.ID {
		t.Fatalf("rule still listed: %+v", list)
	}
}
