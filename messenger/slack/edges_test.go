package slack_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestInteractions_ForeignTeamOrChannelRefused: a click or a command from
// another team than auth.test's, or a click on a card said to be in
// another channel than the cards', changes nothing and gets no answer.
func TestInteractions_ForeignTeamOrChannelRefused(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/foreign.txt"), "0s")
	id, ts, _ := h.posted()
	for _, a := range []slacktest.BlockAction{
		{TeamID: "T2EVIL", ChannelID: channel},
		{ChannelID: "C0ELSEWHERE"},
	} {
		a.UserID, a.UserName, a.MessageTS = approverID, "roberto", ts
		a.BlockID, a.ActionID, a.Value = slack.SlackDecisionBlockID(id), slack.SlackActionAllowOnce, id
		a.ResponseURL = h.fake.ResponseURL("click")
		if st, _ := h.signedPost("/slack/interactions", slacktest.InteractionBody(a.JSON()), time.Now(), secret); st != http.StatusOK {
			t.Fatalf("answered %d", st)
		}
	}
	cmd := slacktest.Command{UserID: approverID, UserName: "roberto", ChannelID: channel, Text: "pending",
		ResponseURL: h.fake.ResponseURL("cmd"), TeamID: "T2EVIL"}
	if st, _ := h.signedPost("/slack/commands", cmd.Form(), time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	h.fake.Quiet(t, "response_url", 500*time.Millisecond)
	h.fake.Quiet(t, "chat.postEphemeral", 100*time.Millisecond)
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Errorf("request is %s after foreign clicks, want pending", r.Status)
	}
	// The same click from our team and channel decides.
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionDeny), time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	h.fake.Wait(t, "chat.update", waitFor)
	if r := h.get(id); r.Status != approvals.StatusDenied {
		t.Errorf("request is %s, want denied", r.Status)
	}
}

// TestInteractions_ReplaySeenAfterRestart: the replay cache is in the
// database: a signed click replayed after a restart has no effect.
func TestInteractions_ReplaySeenAfterRestart(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/restart.txt"), "0s")
	id, ts, _ := h.posted()
	body := h.click(approverID, "roberto", id, ts, slack.SlackActionDeny)
	if st, _ := h.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	h.fake.Wait(t, "chat.update", waitFor)
	h.stop()
	h.start()
	if st, _ := h.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("replay answered %d", st)
	}
	h.fake.Quiet(t, "chat.postEphemeral", 500*time.Millisecond)
}

// TestReplicas_SlackReplayOnSecondReplica_Postgres: a signed click handled
// by one replica and replayed to the other is ignored there (no answer,
// not even "Already decided").
func TestReplicas_SlackReplayOnSecondReplica_Postgres(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	onPG := func(s *setup) { s.cfg.Storage.Driver, s.cfg.Storage.DSN = "postgres", dsn }
	one := newHarness(t, onPG) // alone, it leads: the card goes to its fake
	one.submit(fsWrite("/srv/reports/replica.txt"), "0s")
	id, ts, _ := one.posted()
	two := newHarness(t, onPG)
	body := one.click(approverID, "roberto", id, ts, slack.SlackActionDeny)
	if st, _ := one.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	one.fake.Wait(t, "chat.update", waitFor)
	if st, _ := two.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("replay answered %d", st)
	}
	two.fake.Quiet(t, "chat.postEphemeral", 500*time.Millisecond)
	// A fresh click on the second replica is handled there.
	if st, _ := two.signedPost("/slack/interactions", two.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	wantContains(t, "second click", two.answer("chat.postEphemeral"), "Already decided: ")
}

// TestCommands_PendingListsOnlyThisChannelsCards: /approvals pending lists
// the requests whose card goes to Slack, never one a route sends to the
// web page alone.
func TestCommands_PendingListsOnlyThisChannelsCards(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		s.cfg.Approvals.Routes = []config.Route{{Capability: "network:http", Notify: []string{"web"}}}
	})
	h.submit(fsWrite("/srv/reports/ours.txt"), "0s")
	ours, _, _ := h.posted()
	web := <-h.submit(map[string]any{"capability": "network:http", "target": "https://elsewhere.example.com/x",
		"intent": "fetch a page", "executor": "fetcher"}, "0s")
	if web.req.Status != approvals.StatusPending {
		t.Fatalf("the web-only request: %d %+v", web.status, web.req)
	}
	list := h.say(approverID, "pending")
	if !strings.Contains(list, ours) || strings.Contains(list, web.req.ID) || strings.Contains(list, "elsewhere.example.com") {
		t.Errorf("/approvals pending:\n%s", list)
	}
}
