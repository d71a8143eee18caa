package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	botToken   = "xoxb-1-test-bot"
	appToken   = "xapp-1-test-app"
	secret     = "8f742231b10e8888abcd99yyyzzz85a5"
	channel    = "C0APPROVALS"
	approverID = "U0ROBERTO"
	adminID    = "U0ADMIN" // an admin who is not an approver
	strangerID = "U0EVE"
	agentToken = "agent-token-a1"
	// bossToken is a second admin agent's: a1 may not decide its own
	// requests (own_request).
	bossToken = "agent-token-boss"
	waitFor   = 30 * time.Second // a bound for what must happen, never a wait: a busy machine passes 10 s
	hangBound = 20 * time.Second // a handler slower than this hangs
)

// harness is a whole gateway (SQLite in a temp dir, the real HTTP server on
// 127.0.0.1:0) with the Slack messenger pointed at a fake Slack.
type harness struct {
	t      *testing.T
	fake   *slacktest.Server
	app    *gateway.App
	cfg    config.Config
	base   string
	client *http.Client
	offset atomic.Int64 // added to the gateway's clock

	gw   *gatewaytest.Gateway
	logw *testLog
}

// setup is what a harnessOption may change before the gateway starts.
type setup struct {
	cfg    *config.Config
	fake   *slacktest.Options
	before []func(*slacktest.Server) // run on the fake before the gateway starts
}

type harnessOption func(*setup)

// socketMode configures Socket Mode only: no signing secret, no HTTP routes.
func socketMode(s *setup) {
	slack.Of(*s.cfg).AppToken = appToken
	slack.Of(*s.cfg).SigningSecret = ""
}

// beforeStart runs f on the fake before the gateway starts.
func beforeStart(f func(*slacktest.Server)) harnessOption {
	return func(s *setup) { s.before = append(s.before, f) }
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t,
		client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	fo := slacktest.Options{BotToken: botToken, AppToken: appToken, PingInterval: 200 * time.Millisecond}
	a := gatewaytest.Agent("a1", agentToken, true)
	a.Notify = []string{"slack", "web"}
	cfg := gatewaytest.Config(t, a, gatewaytest.Agent("boss", bossToken, true))
	if err := cfg.AddSections(slack.Section); err != nil {
		panic(err)
	}
	cfg.Server.Timezone = "Asia/Tokyo" // not the machine's zone, and no summer time: times must say JST
	*slack.Of(cfg) = slack.Config{BotToken: botToken, SigningSecret: secret, ChannelID: channel,
		Chat: messenger.Chat[string]{Approvers: []string{approverID}, Admins: []string{approverID, adminID}}}
	su := &setup{cfg: &cfg, fake: &fo}
	for _, o := range opts {
		o(su)
	}
	h.fake = slacktest.New(fo)
	for _, f := range su.before {
		f(h.fake)
	}
	slack.Of(cfg).APIURL = h.fake.APIURL()
	h.cfg = cfg
	t.Cleanup(func() {
		h.stop()
		h.fake.Close()
		h.client.CloseIdleConnections()
	})
	h.start()
	return h
}

// start builds the gateway on the config's database and serves it: the
// first time on a port of its own, after stop on the same one.
func (h *harness) start() {
	t := h.t
	t.Helper()
	h.logw = &testLog{t: t}
	logger := slog.New(slog.NewTextHandler(h.logw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := gateway.AppOptions{
		Logger: logger, Now: h.now,
		Messengers: []messenger.Factory{slack.Factory(*slack.Of(h.cfg),
			slack.Options{Options: messenger.Options{Logger: logger, Location: h.cfg.Server.Zone(), Now: h.now, Backoff: 50 * time.Millisecond, PublicURL: h.cfg.Web.PublicURL}})},
	}
	if h.gw == nil {
		h.gw = gatewaytest.Start(t, h.cfg, opts)
	} else {
		h.gw = h.gw.Restart(t, h.cfg, opts)
	}
	h.app, h.base = h.gw.App, h.gw.URL
}

// stop shuts the gateway down as SIGTERM would, and closes the database.
func (h *harness) stop() {
	if h.gw == nil {
		return
	}
	h.gw.Close()
	h.logw.stop()
}

func (h *harness) now() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) }

// testLog sends the gateway's log to t.Log until the test is over.
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

// api calls the gateway's agent API with the agent's token.
func (h *harness) api(method, path string, body any) (int, []byte) {
	h.t.Helper()
	return h.apiAs(agentToken, method, path, body)
}

// apiAs is api with another agent's token.
func (h *harness) apiAs(token, method, path string, body any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type agentResult struct {
	status int
	req    approvals.Request
}

// submit posts a request as the agent and waits for the answer in the
// background, as an agent blocked on ?wait= does.
func (h *harness) submit(body map[string]any, wait string) <-chan agentResult {
	out := make(chan agentResult, 1)
	go func() {
		st, b := h.api("POST", "/v1/requests?wait="+wait, body)
		var r approvals.Request
		_ = json.Unmarshal(b, &r)
		out <- agentResult{st, r}
	}()
	return out
}

func (h *harness) get(id string) approvals.Request {
	h.t.Helper()
	r, err := h.app.Service.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func fsWrite(target string) map[string]any {
	return map[string]any{"capability": "fs:write", "target": target, "intent": "write the quarterly report",
		"executor": "report_writer", "args": map[string]any{"path": target}}
}

// posted waits for the card of a new request and returns the request id
// (the buttons' value) and the card's ts.
func (h *harness) posted() (id, ts string, call slacktest.Call) {
	h.t.Helper()
	call = h.fake.Wait(h.t, "chat.postMessage", waitFor)
	if call.Status != http.StatusOK {
		h.t.Fatalf("chat.postMessage answered %d", call.Status)
	}
	_, values := call.Buttons()
	if len(values) == 0 {
		h.t.Fatalf("card without buttons: %s", call.Form.Get("blocks"))
	}
	id = values[0]
	ref, err := h.app.Service.CardRef(context.Background(), id, "slack")
	for err != nil && time.Since(call.At) < waitFor { // the dispatcher records the ref just after the call
		time.Sleep(10 * time.Millisecond)
		ref, err = h.app.Service.CardRef(context.Background(), id, "slack")
	}
	if err != nil {
		h.t.Fatalf("card ref of %s: %v", id, err)
	}
	ch, ts, _ := strings.Cut(ref, ":")
	if ch != channel {
		h.t.Fatalf("card ref %q: want channel %s", ref, channel)
	}
	return id, ts, call
}

// signedPost posts body to a Slack endpoint signed at time at with key,
// and checks that the gateway answered within Slack's 3 seconds.
func (h *harness) signedPost(path string, body []byte, at time.Time, key string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.base+path, bytes.NewReader(body))
	for k, v := range slacktest.Sign(key, at, body) {
		req.Header[k] = v
	}
	if bytes.HasPrefix(body, []byte("{")) {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	start := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// Slack gives up after 3 s; that the answer comes before the work is
	// held by TestInteractions_AckedBeforeTheWork, not by a clock. This
	// only catches a handler that hangs.
	if d := time.Since(start); d > hangBound {
		h.t.Errorf("POST %s took %s", path, d)
	}
	return resp.StatusCode, string(b)
}

// click is a button press on the card, posted as Slack posts it.
func (h *harness) click(userID, userName, id, ts, actionID string) []byte {
	return slacktest.InteractionBody(slacktest.BlockAction{
		UserID: userID, UserName: userName, ChannelID: channel, MessageTS: ts,
		BlockID: slack.SlackDecisionBlockID(id), ActionID: actionID, Value: id,
		ResponseURL: h.fake.ResponseURL("click"),
	}.JSON())
}

func (h *harness) command(userID, text string) []byte {
	return slacktest.Command{UserID: userID, UserName: strings.ToLower(userID), ChannelID: channel, Text: text,
		ResponseURL: h.fake.ResponseURL("cmd")}.Form()
}

// say posts the slash command /approvals text as user and returns its
// private answer.
func (h *harness) say(user, text string) string {
	h.t.Helper()
	if st, _ := h.signedPost("/slack/commands", h.command(user, text), time.Now(), secret); st != http.StatusOK {
		h.t.Fatalf("answered %d", st)
	}
	return h.answer("response_url")
}

// answer waits for the private answer to a command or click.
func (h *harness) answer(method string) string {
	h.t.Helper()
	return h.fake.Wait(h.t, method, waitFor).Text()
}

func wantContains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s = %q; want it to contain %q", what, got, want)
	}
}

func waitAgent(t *testing.T, ch <-chan agentResult) agentResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitFor):
		t.Fatal("the agent got no answer")
		return agentResult{}
	}
}
