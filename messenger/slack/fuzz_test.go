package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/policy"
)

// The people of the fuzzed workspace.
const (
	fuzzSecret   = "fuzz-signing-secret-0123456789ab"
	fuzzBot      = "xoxb-fuzz-bot"
	fuzzApprover = "U0APPROVER"
	fuzzAdmin    = "U0ADMIN" // an admin who is not an approver
	fuzzStranger = "U0EVE"
	fuzzRotate   = 2000 // inputs per database, so a long run stays fast
)

// Placeholders a payload uses for the ids of this run's pending request
// and active grant; the fuzzer keeps them as it mutates around them.
const (
	ridMark = "{rid}"
	gidMark = "{gid}"
)

// fuzzSlack is a gateway with the Slack messenger on a temp SQLite file,
// a fake Slack for the answers, and one pending request and one active
// grant for clicks and commands to aim at.
type fuzzSlack struct {
	*gatewaytest.Fuzz
	fake   *slacktest.Server
	client *http.Client
	inputs int
	seq    int
	rid    string
	gid    int64
}

// fakeOnly lets the adapter reach the fake and nothing else: payloads
// carry response_urls, and https://hooks.slack.com is one we trust.
type fakeOnly struct {
	host string
	next http.RoundTripper
}

func (f fakeOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != f.host {
		return nil, fmt.Errorf("fuzz: no network beyond the fake (%s)", r.URL.Host)
	}
	return f.next.RoundTrip(r)
}

func newFuzzSlack(f *testing.F) *fuzzSlack {
	h := &fuzzSlack{fake: slacktest.New(slacktest.Options{BotToken: fuzzBot})}
	u, _ := url.Parse(h.fake.URL)
	h.client = &http.Client{Timeout: 10 * time.Second,
		Transport: fakeOnly{host: u.Host, next: &http.Transport{MaxIdleConnsPerHost: 4}}}
	f.Cleanup(func() {
		h.client.CloseIdleConnections()
		h.fake.Close()
	})
	h.Fuzz = gatewaytest.NewFuzz(f, fuzzRotate, func(_ testing.TB, cfg config.Config) (config.Config, gateway.AppOptions) {
		if err := cfg.AddSections(Section); err != nil {
			panic(err)
		}
		a := config.NewAgent("a1")
		a.Token = "tok-fuzz-slack-a1"
		cfg.Agents = []config.Agent{a}
		*Of(cfg) = Config{BotToken: fuzzBot, SigningSecret: fuzzSecret, ChannelID: "C0APPROVALS",
			APIURL: h.fake.APIURL(), Chat: messenger.Chat[string]{Approvers: []string{fuzzApprover}, Admins: []string{fuzzApprover, fuzzAdmin}}}
		return cfg, gateway.AppOptions{Messengers: []messenger.Factory{
			Factory(*Of(cfg), Options{Options: messenger.Options{HTTPClient: h.client, Location: time.UTC}})}}
	})
	h.Closing = func(app *gateway.App) {
		app.Messengers[0].(*Messenger).shutdown() // waits for the jobs; Run, which would, never ran
	}
	return h
}

// m is the generation's adapter.
func (h *fuzzSlack) m() *Messenger { return h.App.Messengers[0].(*Messenger) }

// prepare readies the gateway for one input: a fresh database now and
// then, a pending request and an active grant, and no memory of earlier
// inputs in the replay cache (the same input must act the same).
func (h *fuzzSlack) prepare(t *testing.T) {
	if h.Next(t) {
		h.rid, h.gid = "", 0
	}
	if h.inputs++; h.inputs%100 == 0 {
		h.fake.Reset()
	}
	h.ready(t)
}

// ready forgets the replays and makes a pending request and an active
// grant, where the last input left none.
func (h *fuzzSlack) ready(t *testing.T) {
	ctx := context.Background()
	if _, err := h.App.DB.ExecContext(ctx, `DELETE FROM replays WHERE messenger = 'slack'`); err != nil {
		t.Fatal(err)
	}
	if r, err := h.App.Service.Get(ctx, h.rid); err != nil || r.Status != approvals.StatusPending {
		h.seq++ // a new target each time: an Allow always grant covers the old one
		r, _, err := h.App.Service.Submit(ctx, approvals.Submission{
			Profile: policy.Profile{Agent: "a1", Ceiling: policy.Supervised}, Capability: "fs:write",
			Target: fmt.Sprintf("/srv/fuzz/%d/report.pdf", h.seq), Channel: "web", SenderID: "owner",
			Intent: "write the report", Executor: "report_writer",
		})
		if err != nil || r.Status != approvals.StatusPending {
			t.Fatalf("setup: submit: %v, status %q", err, r.Status)
		}
		h.rid = r.ID
	}
	if g, err := h.App.Grants.Get(ctx, h.gid); err != nil || !g.Active {
		g, err := h.App.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
			Capability: "fs:read", Target: "/srv/notes/*", GrantedBy: "fuzz", TTL: time.Hour})
		if err != nil {
			t.Fatalf("setup: grant: %v", err)
		}
		h.gid = g.ID
	}
}

// post signs body as Slack does and posts it to path; it returns once
// the work the answer promised is done.
func (h *fuzzSlack) post(t *testing.T, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	for k, v := range slacktest.Sign(fuzzSecret, time.Now(), body) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.Handler.ServeHTTP(rec, req)
	h.m().jobs.Wait()
	if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
		t.Fatalf("POST %s answered %d: %s", path, rec.Code, rec.Body)
	}
	if rec.Code != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("POST %s answered %d with a body not of the error shape: %s", path, rec.Code, rec.Body)
		}
	}
	return rec
}

// wantClick is what a payload may do, read independently of the adapter:
// only a block_actions with exactly one button, whose action id, value
// and block id all name this run's request (or grant), from an approver
// (an admin for Revoke), may change anything.
func (h *fuzzSlack) wantClick(payload string) (d approvals.Decision, revoke bool) {
	var ic slackapi.InteractionCallback
	if json.Unmarshal([]byte(payload), &ic) != nil || ic.Type != slackapi.InteractionTypeBlockActions ||
		len(ic.ActionCallback.BlockActions) != 1 {
		return "", false
	}
	// From the bot's own team (the fake's auth.test: T1) and, for a click
	// on a message, from the cards' channel.
	ch := ic.Container.ChannelID
	if ch == "" {
		ch = ic.Channel.ID
	}
	if ic.Team.ID != "T1" || (ch != "" && ch != "C0APPROVALS") {
		return "", false
	}
	a := ic.ActionCallback.BlockActions[0]
	gid := strconv.FormatInt(h.gid, 10)
	if a.ActionID == "grant_revoke" && a.Value == gid && a.BlockID == "grant:"+gid {
		return "", ic.User.ID == fuzzApprover || ic.User.ID == fuzzAdmin
	}
	if ic.User.ID != fuzzApprover || a.Value != h.rid || a.BlockID != "approval:"+h.rid {
		return "", false
	}
	return map[string]approvals.Decision{"approval_allow_once": approvals.AllowOnce,
		"approval_allow_always": approvals.AllowAlways, "approval_deny": approvals.Deny}[a.ActionID], false
}

// wantRevoke says whether a slash command body revokes this run's grant:
// a well-formed form from an admin whose text is "revoke <id>".
func (h *fuzzSlack) wantRevoke(body string) bool {
	form, err := url.ParseQuery(body)
	if err != nil || form.Get("team_id") != "T1" || (form.Get("user_id") != fuzzApprover && form.Get("user_id") != fuzzAdmin) {
		return false
	}
	f := strings.Fields(form.Get("text"))
	if len(f) != 2 || !strings.EqualFold(f[0], "revoke") {
		return false
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(f[1], "#"), 10, 64)
	return err == nil && id == h.gid
}

// checkState compares what happened to the request and the grant with
// what should have.
func (h *fuzzSlack) checkState(t *testing.T, what string, live bool, d approvals.Decision, revoke bool) {
	ctx := context.Background()
	r, err := h.App.Service.Get(ctx, h.rid)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Status == approvals.StatusPending && d != "" && live:
		t.Fatalf("%s: a well-formed %s from the approver decided nothing", what, d)
	case r.Status != approvals.StatusPending && d == "":
		t.Fatalf("%s decided %s (%s by %s) but is not a well-formed click from an approver", what, r.ID, r.Status, r.DecidedBy)
	case r.Status != approvals.StatusPending && (r.Decision == nil || *r.Decision != d || !strings.HasPrefix(r.DecidedBy, "slack:")):
		t.Fatalf("%s: want %s by slack, got %s %v by %s", what, d, r.Status, r.Decision, r.DecidedBy)
	}
	g, err := h.App.Grants.Get(ctx, h.gid)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case g.Active && revoke && live:
		t.Fatalf("%s: a well-formed revoke from an admin left grant #%d active", what, g.ID)
	case !g.Active && !revoke:
		t.Fatalf("%s revoked grant #%d but is not a well-formed revoke from an admin", what, g.ID)
	}
}

// FuzzSlackPayload posts arbitrary interaction payloads (the form field
// payload) and arbitrary slash command forms, correctly signed, to the
// real handlers: they never panic or answer 5xx, and nothing is decided
// or revoked unless the input is well-formed and from someone allowed.
func FuzzSlackPayload(f *testing.F) {
	h := newFuzzSlack(f)
	respURL := h.fake.ResponseURL("r")
	click := func(user, blockID, actionID, value, view string) string {
		return string(slacktest.BlockAction{UserID: user, UserName: "u", ChannelID: "C0APPROVALS", MessageTS: "1.000100",
			ViewID: view, BlockID: blockID, ActionID: actionID, Value: value, ResponseURL: respURL,
			TriggerID: "1.2.t", ActionTS: "1700000000.000001"}.JSON())
	}
	command := func(user, text string) string {
		return string(slacktest.Command{UserID: user, UserName: "u", ChannelID: "C0APPROVALS", Text: text,
			ResponseURL: respURL, TriggerID: "1.2.c"}.Form())
	}
	rblock, gblock := SlackDecisionBlockID(ridMark), "grant:"+gidMark
	for _, s := range [][2]string{
		{click(fuzzApprover, rblock, SlackActionAllowOnce, ridMark, ""), command(fuzzApprover, "pending")},
		{click(fuzzApprover, rblock, SlackActionAllowAlways, ridMark, ""), command(fuzzAdmin, "revoke "+gidMark)},
		{click(fuzzApprover, rblock, SlackActionDeny, ridMark, "V1"), command(fuzzAdmin, "revoke #"+gidMark)},
		{click(fuzzStranger, rblock, SlackActionAllowOnce, ridMark, ""), command(fuzzStranger, "revoke "+gidMark)},
		{click(fuzzAdmin, rblock, SlackActionAllowOnce, ridMark, ""), command(fuzzApprover, "grants owner")},
		{click(fuzzApprover, "approval:rzzzz", SlackActionAllowOnce, ridMark, ""), command(fuzzApprover, "REVOKE 0")},
		{click(fuzzApprover, rblock, "approval_maybe", ridMark, ""), command(fuzzApprover, "revoke 1 2")},
		{click(fuzzAdmin, gblock, SlackActionRevoke, gidMark, "V1"), command(fuzzApprover, "help")},
		{click(fuzzStranger, gblock, SlackActionRevoke, gidMark, ""), command(fuzzApprover, "nope <!channel>")},
		{click(fuzzAdmin, gblock, SlackActionRevoke, "0"+gidMark, ""), "team_id=T1&text=revoke+1&user_id=" + fuzzAdmin},
		{`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"` + fuzzApprover + `"},"actions":[{"block_id":"approval:{rid}","action_id":"approval_deny","value":"{rid}"},{"block_id":"approval:{rid}","action_id":"approval_allow_once","value":"{rid}"}]}`, "a=%zz"},
		{`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"` + fuzzApprover + `"},"actions":[{"action_id":"approval_deny","value":"{rid}"}]}`, ";"},
		{`{"type":"view_submission","user":{"id":"` + fuzzApprover + `"},"actions":[{"block_id":"approval:{rid}","action_id":"approval_deny","value":"{rid}"}]}`, ""},
		{`{"type":"block_actions","actions":{}}`, "team_id=T1&user_id=" + fuzzAdmin + "&text=revoke%09" + gidMark},
		{`{"type":"block_actions","team":{"id":"T1"},"user":{"id":"` + fuzzApprover + `"},"actions":[{"block_id":"approval:{rid}","action_id":"approval_deny","value":"{rid}"}],"response_url":"https://hooks.slack.com/actions/T1/1/x"}`, "team_id=T1&response_url=https%3A%2F%2Fhooks.slack.com%2Fc&user_id=" + fuzzApprover},
		{`[]`, `payload=`}, {`null`, ""}, {`{`, "%"}, {"", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, payload, cmd string) {
		h.prepare(t)
		gid := strconv.FormatInt(h.gid, 10)
		fill := strings.NewReplacer(ridMark, h.rid, gidMark, gid, url.QueryEscape(gidMark), gid)

		payload = fill.Replace(payload)
		d, revoke := h.wantClick(payload)
		rec := h.post(t, "/slack/interactions", []byte("payload="+url.QueryEscape(payload)))
		h.checkState(t, "the payload", rec.Code == http.StatusOK, d, revoke)
		if d != "" || revoke {
			h.ready(t) // the command gets a pending request and an active grant too
			gid = strconv.FormatInt(h.gid, 10)
			fill = strings.NewReplacer(ridMark, h.rid, gidMark, gid, url.QueryEscape(gidMark), gid)
		}

		cmd = fill.Replace(cmd)
		rec = h.post(t, "/slack/commands", []byte(cmd))
		h.checkState(t, "the command", rec.Code == http.StatusOK, "", h.wantRevoke(cmd))
	})
}
