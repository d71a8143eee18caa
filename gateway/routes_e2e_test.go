package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/web/webtest"
)

// The end-to-end tests of [[approvals.routes]]: one gateway with Telegram
// and Slack, each against its fake, driven as people and agents drive it.

const (
	rtChat        = int64(-100777)
	rtSlackChan   = "C0APPROVALS"
	rtSlackSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	rtSlackToken  = "xoxb-1-routes"
	rtAgentToken  = "agent-token-routes-0123456"
	rtAdminToken  = "admin-token-routes-0123456"
	rtWait        = time.Minute // a bound against a hang, never a speed limit: a busy machine takes its time
)

var (
	rtRoberto = tgbotapi.User{ID: 42, FirstName: "Roberto"}
	rtMallory = tgbotapi.User{ID: 666, FirstName: "Mallory"}
)

const (
	rtAnna    = "U0ANNA"    // a Slack approver named only by the route
	rtSlackOp = "U0ROBERTO" // in slack.approvers, not in the route
)

type routesGW struct {
	t     *testing.T
	tg    *telegramtest.Server
	sl    *slacktest.Server
	cfg   config.Config
	app   *gateway.App
	base  string
	gw    *gatewaytest.Gateway
	hc    *http.Client
	logs  *bytes.Buffer
	logMu sync.Mutex
}

func (g *routesGW) Write(p []byte) (int, error) {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.logs.Write(p)
}

func newRoutesGW(t *testing.T, routes ...config.Route) *routesGW {
	t.Helper()
	return newChatGW(t, func(cfg *config.Config) { cfg.Approvals.Routes = routes })
}

// newChatGW starts a gateway with Telegram and Slack against their fakes,
// its config (agent "a1", admin "boss") changed by edit before validation.
func newChatGW(t *testing.T, edit func(*config.Config)) *routesGW {
	t.Helper()
	g := &routesGW{t: t, tg: telegramtest.New(t, telegramtest.Options{}), sl: slacktest.New(slacktest.Options{BotToken: rtSlackToken}),
		hc: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}, logs: &bytes.Buffer{}}
	a := gatewaytest.Agent("a1", rtAgentToken, false)
	a.Notify = []string{"web"}
	cfg := gatewaytest.Config(t, a, gatewaytest.Agent("boss", rtAdminToken, true))
	if err := cfg.AddSections(telegram.Section, slack.Section); err != nil {
		panic(err)
	}
	*telegram.Of(cfg) = telegram.Config{TokenEnv: "TELEGRAM_BOT_TOKEN", Token: telegramtest.DefaultToken, ChatID: rtChat,
		APIEndpoint: g.tg.Endpoint(), Chat: messenger.Chat[int64]{Approvers: []int64{rtRoberto.ID}}}
	*slack.Of(cfg) = slack.Config{BotTokenEnv: "SLACK_BOT_TOKEN", BotToken: rtSlackToken, SigningSecretEnv: "SLACK_SIGNING_SECRET",
		SigningSecret: rtSlackSecret, ChannelID: rtSlackChan, Chat: messenger.Chat[string]{Approvers: []string{rtSlackOp}}, APIURL: g.sl.APIURL()}
	edit(&cfg)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	g.cfg = cfg
	t.Cleanup(func() {
		g.stop()
		g.sl.Close()
		g.tg.Close()
		g.hc.CloseIdleConnections()
		if t.Failed() {
			g.logMu.Lock()
			t.Logf("gateway log:\n%s", g.logs.String())
			g.logMu.Unlock()
		}
	})
	g.start()
	return g
}

// start serves the gateway: the first time on a port of its own, after
// a stop on the same one (the links the chats were given stay good).
func (g *routesGW) start() {
	t := g.t
	t.Helper()
	var ln net.Listener
	if g.gw == nil {
		ln = gatewaytest.Listen(t)
		g.base = "http://" + ln.Addr().String()
	}
	log := slog.New(slog.NewTextHandler(g, &slog.HandlerOptions{Level: slog.LevelDebug}))
	links := g.pageBase() // the gateway's link base: localhost, as the browser uses the page
	opts := gateway.AppOptions{Logger: log,
		Messengers: []messenger.Factory{
			telegram.Factory(telegram.Options{Config: *telegram.Of(g.cfg), Logger: log, Location: time.UTC,
				GrantTTL: time.Duration(g.cfg.Policy.GrantTTL), PollTimeout: 5 * time.Second, CallTimeout: 2 * time.Second, LinkBase: links}),
			slack.Factory(*slack.Of(g.cfg), slack.Options{Options: messenger.Options{Logger: log, Location: time.UTC, LinkBase: links}}),
		}}
	if g.gw == nil {
		g.gw = gatewaytest.StartOn(t, ln, g.cfg, opts)
	} else {
		g.gw = g.gw.Restart(t, g.cfg, opts)
	}
	g.app = g.gw.App
}

// pageBase is the gateway's web page as a browser opens it (localhost).
func (g *routesGW) pageBase() string {
	return strings.Replace(g.base, "http://127.0.0.1:", "http://localhost:", 1)
}

func (g *routesGW) stop() {
	if g.gw == nil {
		return
	}
	g.gw.Close()
	g.hc.CloseIdleConnections()
}

// restart stops the gateway and starts a new one on the same database and address.
func (g *routesGW) restart() {
	g.t.Helper()
	g.stop()
	g.start()
}

func (g *routesGW) call(method, path, token string, body any) (int, []byte) {
	g.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.hc.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// ask posts a request as the agent; the answer comes on the channel once
// it is finished (or wait passes), as for an agent blocked on ?wait=.
func (g *routesGW) ask(capability, target, wait string) <-chan approvals.Request {
	out := make(chan approvals.Request, 1)
	go func() {
		st, b := g.call("POST", "/v1/requests?wait="+wait, rtAgentToken, map[string]any{
			"capability": capability, "target": target, "intent": "send the report", "call_id": target})
		var r approvals.Request
		if err := json.Unmarshal(b, &r); err != nil || st >= 300 {
			g.t.Errorf("ask: %d %s", st, b)
		}
		out <- r
	}()
	return out
}

// pendingID waits until the agent's request for target is pending and returns its id.
func (g *routesGW) pendingID(target string) string {
	g.t.Helper()
	deadline := time.Now().Add(rtWait)
	for time.Now().Before(deadline) {
		rs, _ := g.app.Service.ListPending(context.Background(), 100)
		for _, r := range rs {
			if r.Target == target {
				return r.ID
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.t.Fatalf("no pending request for %s", target)
	return ""
}

// tgCard waits for the Telegram card of request id that satisfies cond.
func (g *routesGW) tgCard(id string, cond func(telegramtest.Message) bool) telegramtest.Message {
	g.t.Helper()
	var found telegramtest.Message
	g.tg.WaitUntil(g.t, rtWait, "telegram card of "+id, func() bool {
		for _, m := range g.tg.BotMessages() {
			if m.ChatID == rtChat && m.ReplyTo == 0 && strings.Contains(m.Text, id) && (cond == nil || cond(m)) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// slackCard waits for the Slack card of request id that satisfies cond
// (its message as the fake holds it now).
func (g *routesGW) slackCard(id string, cond func(slacktest.Message) bool) slacktest.Message {
	g.t.Helper()
	deadline := time.Now().Add(rtWait)
	for time.Now().Before(deadline) {
		if ref, err := g.app.Service.CardRef(context.Background(), id, "slack"); err == nil {
			ch, ts, _ := strings.Cut(ref, ":")
			if m, ok := g.sl.Message(ch, ts); ok && (cond == nil || cond(m)) {
				return m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	g.t.Fatalf("no slack card of %s in the wanted state", id)
	return slacktest.Message{}
}

// tap presses a Telegram button and returns the answer the person saw.
func (g *routesGW) tap(who tgbotapi.User, card telegramtest.Message, label string) telegramtest.Answer {
	g.t.Helper()
	q := g.tg.PressButton(g.t, who, card.ChatID, card.ID, label)
	var a telegramtest.Answer
	g.tg.WaitUntil(g.t, rtWait, "the answer to a tap", func() bool {
		as := g.tg.Answers(q)
		if len(as) > 0 {
			a = as[0]
		}
		return len(as) > 0
	})
	return a
}

// tapAlways taps Allow always on a Telegram card, then the narrowest scope
// of the keyboard it opens, and returns the answer to the scope's tap.
func (g *routesGW) tapAlways(who tgbotapi.User, card telegramtest.Message) telegramtest.Answer {
	g.t.Helper()
	g.tap(who, card, "Allow always")
	var scopes telegramtest.Message
	g.tg.WaitUntil(g.t, rtWait, "the scope keyboard", func() bool {
		scopes, _ = g.tg.Message(card.ChatID, card.ID)
		bs := scopes.Buttons()
		return len(bs) > 0 && bs[len(bs)-1].Text == "← Back"
	})
	return g.tap(who, scopes, scopes.Buttons()[0].Text)
}

// click presses a Slack button as user and returns what they were told
// privately ("" when nothing).
func (g *routesGW) click(user, id string, card slacktest.Message, action string, wantAnswer bool) string {
	g.t.Helper()
	g.sl.Reset()
	body := slacktest.InteractionBody(slacktest.BlockAction{UserID: user, UserName: strings.ToLower(user),
		ChannelID: rtSlackChan, MessageTS: card.TS, BlockID: slack.SlackDecisionBlockID(id), ActionID: action, Value: id,
		ResponseURL: g.sl.ResponseURL("click")}.JSON())
	req, _ := http.NewRequest("POST", g.base+"/slack/interactions", bytes.NewReader(body))
	for k, v := range slacktest.Sign(rtSlackSecret, time.Now(), body) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := g.hc.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("interaction answered %d", resp.StatusCode)
	}
	if !wantAnswer {
		return ""
	}
	return g.sl.Wait(g.t, "chat.postEphemeral", rtWait).Text()
}

func wantIn(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Fatalf("%s = %q; want it to contain %q", what, got, want)
	}
}

func agentAnswer(t *testing.T, ch <-chan approvals.Request) approvals.Request {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(rtWait):
		t.Fatal("the agent got no answer")
		return approvals.Request{}
	}
}

// sseEvents reads the admin's event stream until the test ends.
func (g *routesGW) sseEvents() <-chan [2]string {
	out := make(chan [2]string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	g.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", g.base+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+rtAdminToken)
	resp, err := g.hc.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var kind string
		for sc.Scan() {
			line := sc.Text()
			if k, ok := strings.CutPrefix(line, "event: "); ok {
				kind = k
			} else if d, ok := strings.CutPrefix(line, "data: "); ok {
				select {
				case out <- [2]string{kind, d}:
				default:
				}
			}
		}
	}()
	return out
}

var quorumRoute = config.Route{Capability: "fs:write", Notify: []string{"telegram", "slack"},
	Approvers: []string{"telegram:42", "slack:" + rtAnna}, Quorum: 2}

// TestRoutes_QuorumTelegramAndSlack: quorum 2 with a Telegram and a Slack
// approver. Outsiders and channel approvers the route leaves out are
// refused and change nothing; the first allow shows on both cards with the
// buttons kept; the same person again is "already counted"; the second
// allow decides, with a grant only if both chose Allow always.
func TestRoutes_QuorumTelegramAndSlack(t *testing.T) {
	g := newRoutesGW(t, quorumRoute)
	events := g.sseEvents()
	for _, tc := range []struct {
		target, slackAction string
		want                approvals.Decision
	}{
		{"/srv/a.txt", slack.SlackActionAllowAlways, approvals.AllowAlways},
		{"/srv/b.txt", slack.SlackActionAllowOnce, approvals.AllowOnce},
	} {
		answer := g.ask("fs:write", tc.target, "30s")
		id := g.pendingID(tc.target)
		card := g.tgCard(id, nil)
		scard := g.slackCard(id, nil)
		wantIn(t, "telegram card", card.Text, "Needs 2 approvals")

		// Refused: not an approver at all; a Slack approver the route leaves out.
		wantIn(t, "Mallory's answer", g.tap(rtMallory, card, "Allow once").Text, telegram.NotApprover)
		wantIn(t, "a left-out approver's answer", g.click(rtSlackOp, id, scard, slack.SlackActionAllowOnce, true), "not among the approvers")
		// An admin agent the route does not name: 403 over the API.
		if st, b := g.call("POST", "/v1/requests/"+id+"/decision", rtAdminToken, map[string]any{"decision": "allow_once"}); st != http.StatusForbidden || !strings.Contains(string(b), "not_approver") {
			t.Fatalf("admin agent outside the route: %d %s", st, b)
		}
		if r, _ := g.app.Service.Get(context.Background(), id); r.Status != approvals.StatusPending || len(r.Approvals) != 0 {
			t.Fatalf("refused taps changed the request: %s %+v", r.Status, r.Approvals)
		}

		// Roberto allows always on Telegram: 1 of 2, on both cards, buttons kept.
		wantIn(t, "Roberto's answer", g.tapAlways(rtRoberto, card).Text, "1 of 2 approvals")
		progress := "1 of 2 approvals: Roberto ✅ (Allow always) · waiting for 1 more"
		card = g.tgCard(id, func(m telegramtest.Message) bool { return strings.Contains(m.Text, progress) })
		if len(card.Buttons()) != 4 {
			t.Fatalf("telegram buttons after one approval: %v", card.Buttons())
		}
		scard = g.slackCard(id, func(m slacktest.Message) bool { return strings.Contains(m.Blocks, progress) })
		if !strings.Contains(scard.Blocks, slack.SlackActionAllowOnce) {
			t.Fatalf("slack card lost its buttons: %s", scard.Blocks)
		}
		wantIn(t, "Roberto again", g.tap(rtRoberto, card, "Allow once").Text, "already counted")
		// The web page shows the progress too.
		if st, page := webtest.PageAs(t, g.app, g.base, "owner"); st != http.StatusOK || !strings.Contains(page, progress) {
			t.Fatalf("web page (%d) does not show %q", st, progress)
		}

		// Anna decides on Slack.
		g.click(rtAnna, id, scard, tc.slackAction, false)
		r := agentAnswer(t, answer)
		if r.Status != approvals.StatusAllowed || r.Decision == nil || *r.Decision != tc.want || r.Quorum != 2 || len(r.Approvals) != 2 {
			t.Fatalf("agent got %s %v, quorum %d, approvals %+v", r.Status, r.Decision, r.Quorum, r.Approvals)
		}
		if r.Approvals[0].Channel != "telegram" || r.Approvals[1].Channel != "slack" || r.Approvals[1].Approver != "slack:"+rtAnna {
			t.Fatalf("approvals %+v", r.Approvals)
		}
		if tc.want == approvals.AllowAlways {
			if r.GrantID == nil {
				t.Fatal("no grant after two Allow always")
			}
			gr, err := g.app.Grants.Get(context.Background(), *r.GrantID)
			if err != nil || !strings.Contains(gr.GrantedBy, "Roberto") || !strings.Contains(gr.GrantedBy, rtAnna) {
				t.Fatalf("granted_by %q, %v", gr.GrantedBy, err)
			}
		} else if r.GrantID != nil {
			t.Fatalf("grant %d written though one approver chose Allow once", *r.GrantID)
		}
		// Both cards show the outcome, without buttons.
		g.tgCard(id, func(m telegramtest.Message) bool { return len(m.Buttons()) == 0 && strings.Contains(m.Text, "Allowed") })
		g.slackCard(id, func(m slacktest.Message) bool { return !strings.Contains(m.Blocks, slack.SlackActionAllowOnce) })
	}
	// The event stream carried the progress.
	deadline := time.After(rtWait)
	for {
		select {
		case e := <-events:
			if e[0] != approvals.EventProgress {
				continue
			}
			var p gateway.ProgressEvent
			if err := json.Unmarshal([]byte(e[1]), &p); err != nil || p.Quorum != 2 || len(p.Approvals) != 1 || p.CallID == "" {
				t.Fatalf("approval_progress %s: %v", e[1], err)
			}
			return
		case <-deadline:
			t.Fatal("no approval_progress event")
		}
	}
}

// TestRoutes_DenyAfterAllow: a deny by a route approver after one allow
// denies at once.
func TestRoutes_DenyAfterAllow(t *testing.T) {
	g := newRoutesGW(t, quorumRoute)
	answer := g.ask("fs:write", "/srv/deny.txt", "30s")
	id := g.pendingID("/srv/deny.txt")
	card := g.tgCard(id, nil)
	g.tapAlways(rtRoberto, card)
	scard := g.slackCard(id, func(m slacktest.Message) bool { return strings.Contains(m.Blocks, "1 of 2") })
	g.click(rtAnna, id, scard, slack.SlackActionDeny, false)
	r := agentAnswer(t, answer)
	if r.Status != approvals.StatusDenied || r.GrantID != nil {
		t.Fatalf("agent got %s, grant %v", r.Status, r.GrantID)
	}
	if n, _ := g.app.Grants.List(context.Background(), policy.GrantFilter{All: true}); len(n) != 0 {
		t.Fatalf("grants after a deny: %v", n)
	}
}

// TestRoutes_RestartKeepsFirstApproval: a restart between the first and
// the second approval keeps the first.
func TestRoutes_RestartKeepsFirstApproval(t *testing.T) {
	g := newRoutesGW(t, quorumRoute)
	g.ask("fs:write", "/srv/restart.txt", "1s")
	id := g.pendingID("/srv/restart.txt")
	g.tapAlways(rtRoberto, g.tgCard(id, nil))
	scard := g.slackCard(id, func(m slacktest.Message) bool { return strings.Contains(m.Blocks, "1 of 2") })
	g.restart()
	if r, _ := g.app.Service.Get(context.Background(), id); r.Status != approvals.StatusPending || r.AllowCount() != 1 {
		t.Fatalf("after restart: %s, %d approvals", r.Status, r.AllowCount())
	}
	g.click(rtAnna, id, scard, slack.SlackActionAllowAlways, false)
	deadline := time.Now().Add(rtWait)
	for {
		r, _ := g.app.Service.Get(context.Background(), id)
		if r.Status == approvals.StatusAllowed {
			if *r.Decision != approvals.AllowAlways || len(r.Approvals) != 2 || r.GrantID == nil {
				t.Fatalf("after the second approval: %v %+v", *r.Decision, r.Approvals)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not allowed after the second approval: %s", r.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRoutes_EscalationToSlackGroup: the card goes to Telegram at once
// and to Slack only after escalate_after, saying why; a Telegram approver
// the route leaves out is refused; a member of the Slack user group the
// route names decides there.
func TestRoutes_EscalationToSlackGroup(t *testing.T) {
	g := newRoutesGW(t, config.Route{Capability: "fs:write", Notify: []string{"telegram"},
		Approvers: []string{"slack:S0OPS"}, Quorum: 1, EscalateAfter: config.Duration(2 * time.Second), EscalateTo: []string{"slack"}})
	g.sl.SetUserGroup("S0OPS", rtAnna, "U0BOB")
	start := time.Now()
	answer := g.ask("fs:write", "/srv/esc.txt", "30s")
	id := g.pendingID("/srv/esc.txt")
	card := g.tgCard(id, nil)
	wantIn(t, "Roberto (not in the route)", g.tap(rtRoberto, card, "Allow once").Text, "not among the approvers")
	post := g.sl.Wait(t, "chat.postMessage", rtWait)
	if el := post.At.Sub(start); el < 2*time.Second {
		t.Fatalf("the Slack card came %v after the request, before escalate_after", el)
	}
	wantIn(t, "escalated card", post.Form.Get("blocks"), "Escalated: no answer in 2s")
	scard := g.slackCard(id, nil)
	wantIn(t, "the Telegram card after escalation", g.tgCard(id, func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, "Escalated")
	}).Text, "no answer in 2s")
	// Someone outside the group is refused; a member decides.
	wantIn(t, "a non-member", g.click("U0EVE", id, scard, slack.SlackActionAllowOnce, true), "not")
	if n := g.sl.Count("usergroups.users.list"); n != 1 {
		t.Fatalf("usergroups.users.list called %d times for the group, want once", n)
	}
	g.click(rtAnna, id, scard, slack.SlackActionAllowOnce, false)
	r := agentAnswer(t, answer)
	if r.Status != approvals.StatusAllowed || r.DecidedBy == "" || !strings.Contains(r.DecidedBy, rtAnna) {
		t.Fatalf("agent got %s by %q", r.Status, r.DecidedBy)
	}
}

// TestRoutes_Reminders: reminders arrive every remind_every, as a reply
// to the Telegram card and in the Slack card's thread, and stop when the
// request is decided.
func TestRoutes_Reminders(t *testing.T) {
	g := newRoutesGW(t, config.Route{Capability: "fs:write", Notify: []string{"telegram", "slack"}, Quorum: 1,
		RemindEvery: config.Duration(time.Second)})
	answer := g.ask("fs:write", "/srv/remind.txt", "30s")
	id := g.pendingID("/srv/remind.txt")
	card := g.tgCard(id, nil)
	scard := g.slackCard(id, nil)
	replies := func() int {
		n := 0
		for _, m := range g.tg.BotMessages() {
			if m.ReplyTo == card.ID && strings.Contains(m.Text, "Reminder") {
				n++
			}
		}
		return n
	}
	g.tg.WaitUntil(t, rtWait, "two Telegram reminders", func() bool { return replies() >= 2 })
	deadline := time.Now().Add(rtWait)
	for len(g.sl.Replies(rtSlackChan, scard.TS)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("Slack thread reminders: %d", len(g.sl.Replies(rtSlackChan, scard.TS)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantIn(t, "slack reminder", g.sl.Replies(rtSlackChan, scard.TS)[0].Text, "Reminder")
	g.tap(rtRoberto, card, "Allow once")
	if r := agentAnswer(t, answer); r.Status != approvals.StatusAllowed {
		t.Fatalf("agent got %s", r.Status)
	}
	// One reminder already being sent when the decision came may still
	// land; reminders that had not stopped would bring three more.
	tgN, slN := replies(), len(g.sl.Replies(rtSlackChan, scard.TS))
	time.Sleep(3 * time.Second)
	if replies() > tgN+1 || len(g.sl.Replies(rtSlackChan, scard.TS)) > slN+1 {
		t.Fatalf("reminders after the decision: telegram %d → %d, slack %d → %d", tgN, replies(), slN,
			len(g.sl.Replies(rtSlackChan, scard.TS)))
	}
	if r, _ := g.app.Service.Get(context.Background(), id); r.Status != approvals.StatusAllowed {
		t.Fatalf("status %s", r.Status)
	}
	var due int
	if err := g.app.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM requests WHERE remind_at IS NOT NULL`).Scan(&due); err != nil || due != 0 {
		t.Fatalf("%d reminders still due after the decision (%v)", due, err)
	}
}
