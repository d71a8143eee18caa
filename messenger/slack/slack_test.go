package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/policy"
)

func TestEndToEnd_AllowOnce(t *testing.T) {
	h := newHarness(t)
	agent := h.submit(fsWrite("/srv/reports/q1.txt"), "30s")

	id, ts, post := h.posted()
	if got := post.Form.Get("channel"); got != channel {
		t.Errorf("posted to %q, want %q", got, channel)
	}
	ids, values := post.Buttons()
	if strings.Join(ids, ",") != "approval_allow_once,approval_allow_for_1h,approval_allow_always,approval_deny" {
		t.Errorf("buttons %v", ids)
	}
	for i, v := range values {
		want := id
		if ids[i] == slack.SlackActionAllowAlways {
			want = id + ":0" // the scope its confirm dialog names: the narrowest
		}
		if v != want {
			t.Errorf("button %s value %q, want %q", ids[i], v, want)
		}
	}
	wantContains(t, "fallback text", post.Text(), "a1 wants fs:write on /srv/reports/q1.txt")
	// The expiry is relative and, for clients without date tokens, in server.timezone.
	wantContains(t, "card", post.Form.Get("blocks"), "⏳ expires in 9 min, ")
	wantContains(t, "card", post.Form.Get("blocks"), " JST")

	// A non-approver's click is refused privately and changes nothing.
	if st, _ := h.signedPost("/slack/interactions", h.click(strangerID, "eve", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("interaction answered %d", st)
	}
	eph := h.fake.Wait(t, "chat.postEphemeral", waitFor)
	if eph.Form.Get("user") != strangerID || eph.Form.Get("channel") != channel {
		t.Errorf("ephemeral to %s in %s", eph.Form.Get("user"), eph.Form.Get("channel"))
	}
	wantContains(t, "refusal", eph.Text(), "You are not an approver")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("after a stranger's click the request is %s", r.Status)
	}

	// The approver's Allow once lets the waiting agent go.
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("interaction answered %d", st)
	}
	res := waitAgent(t, agent)
	if res.status != http.StatusOK || res.req.Status != approvals.StatusAllowed || res.req.Decision == nil ||
		*res.req.Decision != approvals.AllowOnce {
		t.Fatalf("agent got %d %+v", res.status, res.req)
	}
	if res.req.DecidedBy != "slack:roberto (U0ROBERTO)" {
		t.Errorf("decided_by %q", res.req.DecidedBy)
	}

	upd := h.fake.Wait(t, "chat.update", waitFor)
	if upd.Form.Get("channel") != channel || upd.Form.Get("ts") != ts {
		t.Errorf("updated %s:%s, want %s:%s", upd.Form.Get("channel"), upd.Form.Get("ts"), channel, ts)
	}
	if ids, _ := upd.Buttons(); len(ids) != 0 {
		t.Errorf("finished card still has buttons %v", ids)
	}
	wantContains(t, "updated card", upd.Form.Get("blocks"), "Allowed once by roberto")
	if m, ok := h.fake.Message(channel, ts); !ok || m.Updates != 1 || !strings.Contains(m.Text, "Allowed once") {
		t.Errorf("message in the fake: %+v", m)
	}
}

func TestInteractions_Signature(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/q2.txt"), "0s")
	id, ts, _ := h.posted()
	body := h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce)

	tests := []struct {
		name string
		at   time.Time
		key  string
	}{
		{"bad signature", time.Now(), "not-the-secret"},
		{"timestamp ten minutes old", time.Now().Add(-10 * time.Minute), secret},
		{"timestamp ten minutes ahead", time.Now().Add(10 * time.Minute), secret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, _ := h.signedPost("/slack/interactions", body, tt.at, tt.key); st != http.StatusUnauthorized {
				t.Errorf("answered %d, want 401", st)
			}
		})
	}
	t.Run("no signature", func(t *testing.T) {
		resp, err := h.client.Post(h.base+"/slack/interactions", "application/x-www-form-urlencoded",
			strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("answered %d, want 401", resp.StatusCode)
		}
	})
	t.Run("body over 64 KiB", func(t *testing.T) {
		big := append([]byte("payload="), make([]byte, 70<<10)...)
		if st, _ := h.signedPost("/slack/interactions", big, time.Now(), secret); st != http.StatusRequestEntityTooLarge {
			t.Errorf("answered %d, want 413", st)
		}
	})
	h.fake.Quiet(t, "chat.postEphemeral", 300*time.Millisecond)
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Errorf("after refused requests the request is %s", r.Status)
	}
}

func TestInteractions_ReplayHasNoSecondEffect(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/q3.txt"), "0s")
	id, ts, _ := h.posted()
	body := h.click(approverID, "roberto", id, ts, slack.SlackActionDeny)

	if st, _ := h.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	h.fake.Wait(t, "chat.update", waitFor)
	if r := h.get(id); r.Status != approvals.StatusDenied {
		t.Fatalf("request is %s, want denied", r.Status)
	}
	// The same signed request again (within the 5-minute window): 200, and
	// nothing happens, not even an "already decided" note.
	if st, _ := h.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
		t.Fatalf("replay answered %d", st)
	}
	h.fake.Quiet(t, "chat.postEphemeral", 500*time.Millisecond)
	if n := h.fake.Count("chat.update"); n != 1 {
		t.Errorf("%d chat.update calls, want 1", n)
	}

	// A second, genuine click is a different request and is told who won.
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	wantContains(t, "second click", h.answer("chat.postEphemeral"), "Already decided: denied by roberto at ")
}

// Slack wants an answer within 3 seconds; a slow Slack API (or database)
// must not delay it: the work happens after the answer.
func TestInteractions_AckedBeforeTheWork(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/slow.txt"), "0s")
	id, ts, _ := h.posted()
	h.fake.Fail("chat.postEphemeral", slacktest.Failure{Delay: 5 * time.Second})
	if st, _ := h.signedPost("/slack/interactions", h.click(strangerID, "eve", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	// The answer came while Slack still held the refusal: the work
	// happens after the answer, however busy the machine.
	if n := h.fake.Count("chat.postEphemeral"); n != 0 {
		t.Errorf("the click was answered after the slow refusal (%d recorded)", n)
	}
	h.fake.Wait(t, "chat.postEphemeral", waitFor)
}

// The card's ts is persisted: a click after a restart decides, and the
// card posted before the restart is the one edited.
func TestRestart_ClickAfterRestart(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/restart.txt"), "0s")
	id, ts, _ := h.posted()
	h.stop()
	h.start()
	agent := h.submit(map[string]any{"capability": "fs:write", "target": "/srv/reports/other.txt"}, "0s")
	other, _, _ := h.posted() // pending cards are not posted twice: this is the new request's
	if other == id {
		t.Fatalf("the card of %s was posted again after the restart", id)
	}
	waitAgent(t, agent)
	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("answered %d", st)
	}
	upd := h.fake.Wait(t, "chat.update", waitFor)
	if upd.Form.Get("ts") != ts {
		t.Errorf("edited ts %s, want the pre-restart card %s", upd.Form.Get("ts"), ts)
	}
	if r := h.get(id); r.Status != approvals.StatusAllowed {
		t.Errorf("request is %s", r.Status)
	}
}

func TestInteractions_UnexpectedActionsRefused(t *testing.T) {
	h := newHarness(t)
	h.submit(fsWrite("/srv/reports/q4.txt"), "0s")
	id, ts, _ := h.posted()
	h.submit(map[string]any{"capability": "code:exec", "target": "make deploy", "intent": "deploy", "executor": "make"}, "0s")
	execID, execTS, execPost := h.posted()
	if ids, _ := execPost.Buttons(); strings.Join(ids, ",") != "approval_allow_once,approval_deny" {
		t.Errorf("code:exec card buttons %v; Allow always must be absent", ids)
	}

	tests := []struct {
		name                     string
		blockID, actionID, value string
		want                     string
	}{
		{"unknown action id", slack.SlackDecisionBlockID(id), "approval_allow_forever", id, "not a button the gateway knows"},
		{"block of another request", slack.SlackDecisionBlockID(execID), slack.SlackActionAllowOnce, id, "not a button"},
		{"value not a request id", slack.SlackDecisionBlockID("../x"), slack.SlackActionAllowOnce, "../x", "not a button"},
		{"unknown request", slack.SlackDecisionBlockID("rzzzzzzzz"), slack.SlackActionAllowOnce, "rzzzzzzzz", "no longer exists"},
		{"forged allow always on code:exec", slack.SlackDecisionBlockID(execID), slack.SlackActionAllowAlways, execID,
			"Allow always is not offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := slacktest.InteractionBody(slacktest.BlockAction{UserID: approverID, UserName: "roberto",
				ChannelID: channel, MessageTS: ts, BlockID: tt.blockID, ActionID: tt.actionID, Value: tt.value}.JSON())
			if st, _ := h.signedPost("/slack/interactions", body, time.Now(), secret); st != http.StatusOK {
				t.Fatalf("answered %d", st)
			}
			wantContains(t, "refusal", h.answer("chat.postEphemeral"), tt.want)
		})
	}
	t.Run("not an interaction payload", func(t *testing.T) {
		if st, _ := h.signedPost("/slack/interactions", []byte("payload=%7Bnope"), time.Now(), secret); st != http.StatusBadRequest {
			t.Errorf("answered %d, want 400", st)
		}
	})
	for _, rid := range []string{id, execID} {
		if r := h.get(rid); r.Status != approvals.StatusPending || r.GrantID != nil {
			t.Errorf("%s is %s (grant %v) after refused clicks", rid, r.Status, r.GrantID)
		}
	}
	if gs, _ := h.app.Grants.List(context.Background(), policy.GrantFilter{}); len(gs) != 0 {
		t.Errorf("grants written: %+v", gs)
	}
	_ = execTS
}

func TestInteractions_AllowAlwaysWritesGrant(t *testing.T) {
	h := newHarness(t)
	agent := h.submit(fsWrite("/srv/reports/q1.txt"), "30s")
	id, ts, _ := h.posted()
	h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowAlways), time.Now(), secret)
	res := waitAgent(t, agent)
	if res.req.Status != approvals.StatusAllowed || res.req.GrantID == nil {
		t.Fatalf("agent got %+v", res.req)
	}
	g, err := h.app.Grants.Get(context.Background(), *res.req.GrantID)
	if err != nil || g.GrantedBy != "slack:roberto (U0ROBERTO)" || g.Capability != "fs:write" {
		t.Fatalf("grant %+v, %v", g, err)
	}
	wantContains(t, "updated card", h.fake.Wait(t, "chat.update", waitFor).Form.Get("blocks"),
		fmt.Sprintf("Allowed always by roberto (grant #%d", g.ID))
}

// A decision or change made anywhere else edits the Slack card.
func TestUpdate_FromOtherChannels(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name   string
		finish func(id string)
		want   string
	}{
		{"telegram", func(id string) {
			if _, err := h.app.Service.Decide(context.Background(), id, approvals.AllowOnce,
				approvals.Actor{Channel: "telegram", ID: "42", Name: "Roberto"}); err != nil {
				t.Fatal(err)
			}
		}, "✅ Allowed once by Roberto"},
		{"web page / admin API", func(id string) {
			if st, b := h.apiAs(bossToken, "POST", "/v1/requests/"+id+"/decision", map[string]string{"decision": "deny"}); st != http.StatusOK {
				t.Fatalf("decision API answered %d %s", st, b)
			}
		}, "⛔ Denied by"},
		{"agent cancels", func(id string) {
			if st, b := h.api("DELETE", "/v1/requests/"+id, nil); st != http.StatusOK {
				t.Fatalf("DELETE answered %d %s", st, b)
			}
		}, "↩ Withdrawn by the agent"},
		{"expiry", func(id string) {
			h.offset.Add(int64(11 * time.Minute))
		}, "⌛ Expired"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.submit(fsWrite(fmt.Sprintf("/srv/reports/%d.txt", i)), "0s")
			id, ts, _ := h.posted()
			tt.finish(id)
			upd := h.fake.Wait(t, "chat.update", waitFor)
			if upd.Form.Get("ts") != ts {
				t.Errorf("updated ts %s, want %s", upd.Form.Get("ts"), ts)
			}
			if ids, _ := upd.Buttons(); len(ids) != 0 {
				t.Errorf("buttons left: %v", ids)
			}
			wantContains(t, "updated card", upd.Form.Get("blocks"), tt.want)
		})
	}
}

func TestPost_RateLimitedHonoursRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.fake.Fail("chat.postMessage", slacktest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 1})
	h.submit(fsWrite("/srv/reports/rl.txt"), "0s")
	first := h.fake.Wait(t, "chat.postMessage", waitFor)
	if first.Status != http.StatusTooManyRequests {
		t.Fatalf("first post answered %d, want the injected 429", first.Status)
	}
	// Meanwhile the request is pending and visible: nothing is lost.
	pending, err := h.app.Service.ListPending(context.Background(), 10)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending %v %v", pending, err)
	}
	second := h.fake.Wait(t, "chat.postMessage", waitFor)
	if second.Status != http.StatusOK {
		t.Fatalf("second post answered %d", second.Status)
	}
	if gap := second.At.Sub(first.At); gap < time.Second-20*time.Millisecond {
		t.Errorf("retried after %s; Slack asked for 1s", gap)
	}
	if _, values := second.Buttons(); len(values) == 0 || values[0] != pending[0].ID {
		t.Errorf("card for %v, want %s", values, pending[0].ID)
	}
}

func TestPost_ServerErrorsRetried(t *testing.T) {
	h := newHarness(t)
	h.fake.Fail("chat.postMessage", slacktest.Failure{Status: 500}, slacktest.Failure{Error: "internal_error"})
	agent := h.submit(fsWrite("/srv/reports/e.txt"), "30s")
	if c := h.fake.Wait(t, "chat.postMessage", waitFor); c.Status != 500 {
		t.Fatalf("first post answered %d", c.Status)
	}
	if c := h.fake.Wait(t, "chat.postMessage", waitFor); c.Error != "internal_error" {
		t.Fatalf("second post answered %+v", c.Error)
	}
	id, ts, _ := h.posted()
	h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce), time.Now(), secret)
	if res := waitAgent(t, agent); res.req.Status != approvals.StatusAllowed {
		t.Fatalf("agent got %+v", res.req)
	}
}

func TestCommands(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	g, err := h.app.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:read", Target: "/srv/reports/*", GrantedBy: "cli", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h.submit(fsWrite("/srv/reports/cmd.txt"), "0s")
	id, _, _ := h.posted()
	gid := fmt.Sprint(g.ID)

	tests := []struct {
		name, user, text string
		want             []string
	}{
		{"help for anyone", strangerID, "help", []string{"/approvals pending", "/approvals revoke ID"}},
		{"empty is help", strangerID, "", []string{"/approvals grants [sender]"}},
		{"pending", approverID, "pending", []string{"Pending requests (1)", id, "/srv/reports/cmd.txt",
			"expires in 9 min, <!date^", " JST>"}},
		{"pending refused to strangers", strangerID, "pending", []string{"You are not an approver"}},
		{"grants", approverID, "grants", []string{"Active grants (1)", "#" + gid, "fs:read", "`/srv/reports/*`", "web/owner"}},
		{"grants of a sender", adminID, "grants owner", []string{"#" + gid}},
		{"grants of another sender", approverID, "grants nobody", []string{"No active grants."}},
		{"grants refused to strangers", strangerID, "grants", []string{"You are not an approver"}},
		{"revoke refused to non-admins", strangerID, "revoke " + gid, []string{"Only the people listed in `slack.admins`"}},
		{"revoke refused to approvers who are not admins", "U0OTHER", "revoke " + gid, []string{"slack.admins"}},
		{"revoke needs a number", adminID, "revoke twelve", []string{"Usage: `/approvals revoke ID`"}},
		{"unknown subcommand", approverID, "<!channel>", []string{"Unknown subcommand `&lt;!channel&gt;`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if st, _ := h.signedPost("/slack/commands", h.command(tt.user, tt.text), time.Now(), secret); st != http.StatusOK {
				t.Fatalf("answered %d", st)
			}
			got := h.answer("response_url")
			for _, w := range tt.want {
				wantContains(t, "answer", got, w)
			}
		})
	}
	if got, _ := h.app.Grants.Get(ctx, g.ID); !got.Active {
		t.Fatalf("grant revoked by a refused command: %+v", got)
	}

	t.Run("revoke by an admin", func(t *testing.T) {
		h.signedPost("/slack/commands", h.command(adminID, "revoke #"+gid), time.Now(), secret)
		wantContains(t, "answer", h.answer("response_url"), "Revoked grant #"+gid)
		got, _ := h.app.Grants.Get(ctx, g.ID)
		if got.Active || got.RevokedAt == nil {
			t.Errorf("grant still active: %+v", got)
		}
		h.signedPost("/slack/commands", h.command(adminID, "revoke "+gid), time.Now(), secret)
		wantContains(t, "second revoke", h.answer("response_url"), "was not active")
	})
	t.Run("bad signature", func(t *testing.T) {
		if st, _ := h.signedPost("/slack/commands", h.command(adminID, "revoke 1"), time.Now(), "wrong"); st != http.StatusUnauthorized {
			t.Errorf("answered %d, want 401", st)
		}
		if st, _ := h.signedPost("/slack/commands", h.command(adminID, "pending"), time.Now().Add(-10*time.Minute), secret); st != http.StatusUnauthorized {
			t.Errorf("stale: answered %d, want 401", st)
		}
	})
	t.Run("replay", func(t *testing.T) {
		body := h.command(approverID, "pending")
		h.signedPost("/slack/commands", body, time.Now(), secret)
		h.answer("response_url")
		h.signedPost("/slack/commands", body, time.Now(), secret)
		h.fake.Quiet(t, "response_url", 300*time.Millisecond)
	})
}

func TestEvents_URLVerificationAndHome(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	st, body := h.signedPost("/slack/events", []byte(`{"type":"url_verification","token":"x","challenge":"c-123"}`), time.Now(), secret)
	if st != http.StatusOK || body != "c-123" {
		t.Errorf("url_verification: %d %q", st, body)
	}
	if st, _ := h.signedPost("/slack/events", []byte(`{"type":"url_verification","challenge":"c"}`), time.Now(), "x"); st != http.StatusUnauthorized {
		t.Errorf("unsigned url_verification answered %d", st)
	}

	g, err := h.app.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "network:http", Target: "*.example.com", GrantedBy: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	h.submit(fsWrite("/srv/reports/home.txt"), "0s")
	id, _, _ := h.posted()

	// An approver (and admin) opens the Home tab.
	h.signedPost("/slack/events", slacktest.AppHomeOpened(approverID, ""), time.Now(), secret)
	view := h.fake.Wait(t, "views.publish", waitFor)
	ids, values := view.Buttons()
	if len(ids) != 5 || values[0] != id || ids[4] != slack.SlackActionRevoke || values[4] != fmt.Sprint(g.ID) {
		t.Errorf("home buttons %v %v", ids, values)
	}

	// A stranger sees no requests.
	h.signedPost("/slack/events", slacktest.AppHomeOpened(strangerID, ""), time.Now(), secret)
	// (A refresh of the approver's tab, for the card just posted, may
	// come first: wait for the stranger's own.)
	stranger := h.fake.WaitMatch(t, "views.publish", waitFor, func(c slacktest.Call) bool {
		return strings.Contains(string(c.Body), `"user_id":"`+strangerID+`"`)
	})
	if ids, _ := stranger.Buttons(); len(ids) != 0 || !strings.Contains(string(stranger.Body), "not an approver") {
		t.Errorf("stranger's home: %s", stranger.Body)
	}

	// A decision elsewhere refreshes the approver's tab.
	if _, err := h.app.Service.Decide(ctx, id, approvals.Deny, approvals.Actor{Channel: "web", ID: "owner"}); err != nil {
		t.Fatal(err)
	}
	refreshed := h.fake.WaitMatch(t, "views.publish", waitFor, func(c slacktest.Call) bool {
		return !strings.Contains(string(c.Body), id) // earlier refreshes may still list it
	})
	if !strings.Contains(string(refreshed.Body), `"user_id":"`+approverID+`"`) {
		t.Errorf("refreshed someone else's home: %s", refreshed.Body)
	}

	// The admin revokes from the Home tab.
	h.signedPost("/slack/interactions", slacktest.InteractionBody(slacktest.BlockAction{UserID: approverID,
		UserName: "roberto", ViewID: "V1", BlockID: slack.SlackRevokeBlockID(g.ID), ActionID: slack.SlackActionRevoke,
		Value: fmt.Sprint(g.ID)}.JSON()), time.Now(), secret)
	h.fake.WaitMatch(t, "views.publish", waitFor, func(c slacktest.Call) bool {
		ids, _ := c.Buttons()
		return len(ids) == 0 // the tab without the revoked grant
	})
	if got, _ := h.app.Grants.Get(ctx, g.ID); got.Active {
		t.Error("grant not revoked from the Home tab")
	}
}

func TestSocketMode_InteractiveAckedAndDecided(t *testing.T) {
	h := newHarness(t, socketMode)
	h.fake.Wait(t, "socket.connect", waitFor)
	agent := h.submit(fsWrite("/srv/reports/sock.txt"), "30s")
	id, ts, _ := h.posted()

	send := func(typ string, payload json.RawMessage) {
		t.Helper()
		env, err := h.fake.SendEnvelope(typ, payload)
		if err != nil {
			t.Fatal(err)
		}
		ack := h.fake.Wait(t, "socket.ack", waitFor)
		if !strings.Contains(string(ack.Body), `"envelope_id":"`+env+`"`) {
			t.Errorf("ack %s, want envelope %s", ack.Body, env)
		}
	}
	action := func(user, name string) json.RawMessage {
		return slacktest.BlockAction{UserID: user, UserName: name, ChannelID: channel, MessageTS: ts,
			BlockID: slack.SlackDecisionBlockID(id), ActionID: slack.SlackActionAllowOnce, Value: id,
			ResponseURL: h.fake.ResponseURL("sock")}.JSON()
	}

	send("interactive", action(strangerID, "eve"))
	wantContains(t, "refusal", h.answer("chat.postEphemeral"), "You are not an approver")

	click := action(approverID, "roberto")
	send("interactive", click)
	if res := waitAgent(t, agent); res.req.Status != approvals.StatusAllowed || res.req.DecidedBy != "slack:roberto (U0ROBERTO)" {
		t.Fatalf("agent got %+v", res.req)
	}
	wantContains(t, "updated card", h.fake.Wait(t, "chat.update", waitFor).Form.Get("blocks"), "Allowed once by roberto")

	// Slack resends an envelope it thinks was lost: acked, no second effect.
	send("interactive", click)
	h.fake.Quiet(t, "chat.postEphemeral", 300*time.Millisecond)

	// Slack rotates the connection: the client reconnects and carries on.
	if err := h.fake.Disconnect(); err != nil {
		t.Fatal(err)
	}
	h.fake.Wait(t, "socket.connect", waitFor)
	send("slash_commands", slacktest.Command{UserID: approverID, ChannelID: channel, Text: "pending",
		ResponseURL: h.fake.ResponseURL("sock")}.JSON())
	wantContains(t, "pending over socket", h.answer("response_url"), "No requests are pending")

	// The network drops: it reconnects with backoff.
	h.fake.DropSockets()
	h.fake.Wait(t, "socket.connect", waitFor)
	send("events_api", slacktest.AppHomeOpened(approverID, ""))
	h.fake.Wait(t, "views.publish", waitFor)

	// No HTTP routes without a signing secret.
	if st, _ := h.signedPost("/slack/interactions", []byte("payload={}"), time.Now(), secret); st == http.StatusOK {
		t.Error("interactions endpoint mounted in Socket Mode without a signing secret")
	}
}

func TestSocketMode_TransientOpenFailureRetried(t *testing.T) {
	h := newHarness(t, socketMode, beforeStart(func(f *slacktest.Server) {
		f.Fail("apps.connections.open", slacktest.Failure{Status: 500}, slacktest.Failure{Error: "internal_error"})
	}))
	h.fake.Wait(t, "socket.connect", waitFor)
	if n := h.fake.Count("apps.connections.open"); n != 3 {
		t.Errorf("%d apps.connections.open calls, want 3 (two failures, then success)", n)
	}
	if done, err := h.gw.Served(100 * time.Millisecond); done {
		t.Fatalf("Serve stopped: %v", err)
	}
}

func TestSocketMode_RefusedTokenStops(t *testing.T) {
	tests := []struct {
		name string
		opt  harnessOption
		code string
	}{
		{"invalid_auth", func(s *setup) { s.fake.AppToken = "xapp-1-another-app" }, "invalid_auth"},
		{"token_revoked", beforeStart(func(f *slacktest.Server) {
			f.Fail("apps.connections.open", slacktest.Failure{Error: "token_revoked"})
		}), "token_revoked"},
		{"bot token given as app token", beforeStart(func(f *slacktest.Server) {
			f.Fail("apps.connections.open", slacktest.Failure{Error: "not_allowed_token_type"})
		}), "not_allowed_token_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, socketMode, tt.opt)
			done, err := h.gw.Served(waitFor)
			if !done {
				t.Fatal("Serve kept running with a refused app-level token")
			}
			if !errors.Is(err, slack.ErrSocketAuth) || !strings.Contains(err.Error(), tt.code) ||
				!strings.Contains(err.Error(), "slack.app_token_env") {
				t.Errorf("Serve returned %v; want a clear app-token error naming %s", err, tt.code)
			}
		})
	}
}
