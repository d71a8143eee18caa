package discord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/discord"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	botToken   = "discord-test-bot-token"
	appID      = "1100000000000000001"
	guildID    = "1100000000000000002"
	channelID  = "1100000000000000003"
	approverID = "80351110224678912"
	adminID    = "80351110224678913" // an admin who is not an approver
	strangerID = "80351110224678914"
	agentToken = "agent-token-a1-0123456789abcdef"
	// bossToken is a second admin agent's: a1 may not decide its own
	// requests (own_request).
	bossToken = "agent-token-boss-0123456789abcdef"
	waitFor   = 30 * time.Second // a bound for what must happen, never a wait: a busy machine's jittered backoff can pass 10 s
)

// harness is a whole gateway (SQLite in a temp dir, the real HTTP server on
// 127.0.0.1:0) with the Discord messenger pointed at the fake.
type harness struct {
	t      *testing.T
	fake   *discordtest.Server
	app    *gateway.App
	cfg    config.Config
	base   string
	client *http.Client
	tg     *telegramtest.Server // with withTelegram
	offset atomic.Int64         // added to the gateway's clock

	gw   *gatewaytest.Gateway
	logw *testLog
}

type harnessOption func(*harness)

// tgChat is the Telegram chat of withTelegram; tgRoberto its approver.
const tgChat = int64(-100777)

var tgRoberto = tgbotapi.User{ID: 42, FirstName: "Roberto"}

// withTelegram adds Telegram, against its own fake, beside Discord.
func withTelegram(h *harness) {
	h.tg = telegramtest.New(h.t, telegramtest.Options{})
	*telegram.Of(h.cfg) = telegram.Config{TokenEnv: "TELEGRAM_BOT_TOKEN", Token: telegramtest.DefaultToken, ChatID: tgChat,
		APIEndpoint: h.tg.Endpoint(), Chat: messenger.Chat[int64]{Approvers: []int64{tgRoberto.ID}, Language: "en"}}
	h.cfg.Agents[0].Notify = append(h.cfg.Agents[0].Notify, "telegram")
}

// withRoutes sets [[approvals.routes]].
func withRoutes(rs ...config.Route) harnessOption {
	return func(h *harness) { h.cfg.Approvals.Routes = rs }
}

// httpMode selects the interactions endpoint.
func httpMode(h *harness) { discord.Of(h.cfg).Mode = discord.ModeHTTP }

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	h := &harness{t: t, client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	h.fake = discordtest.New(discordtest.Options{Token: botToken, ApplicationID: appID, GuildID: guildID, ChannelID: channelID,
		HeartbeatInterval: 200 * time.Millisecond})
	a := gatewaytest.Agent("a1", agentToken, true)
	a.Notify = []string{"discord", "web"}
	cfg := gatewaytest.Config(t, a, gatewaytest.Agent("boss", bossToken, true))
	if err := cfg.AddSections(telegram.Section, discord.Section); err != nil {
		panic(err)
	}
	cfg.Server.Timezone = "Asia/Tokyo"
	*discord.Of(cfg) = discord.Config{Token: botToken, ApplicationID: appID, GuildID: guildID, ChannelID: channelID,
		Chat: messenger.Chat[string]{Approvers: []string{approverID}, Admins: []string{approverID, adminID}, Language: "en"},
		Mode: discord.ModeGateway, APIURL: h.fake.APIURL(), PublicKey: h.fake.PublicKey()}
	h.cfg = cfg
	for _, o := range opts {
		o(h)
	}
	if err := h.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.fake.Close()
		h.client.CloseIdleConnections()
	})
	h.start()
	return h
}

func (h *harness) start() {
	t := h.t
	t.Helper()
	h.logw = &testLog{t: t}
	logger := slog.New(slog.NewTextHandler(h.logw, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ms := []messenger.Factory{discord.Factory(*discord.Of(h.cfg), discord.Options{Options: messenger.Options{Logger: logger, Location: h.cfg.Server.Zone(), Now: h.now, Backoff: 50 * time.Millisecond, PublicURL: h.cfg.Web.PublicURL, LinkBase: gateway.LinkBase(h.cfg)}})}
	if h.tg != nil {
		ms = append(ms, telegram.Factory(telegram.Options{Config: *telegram.Of(h.cfg), Logger: logger, Location: time.UTC,
			GrantTTL: time.Duration(h.cfg.Policy.GrantTTL), PollTimeout: 2 * time.Second, CallTimeout: 2 * time.Second}))
	}
	h.gw = gatewaytest.Start(t, h.cfg, gateway.AppOptions{Logger: logger, Now: h.now, Messengers: ms})
	h.app, h.base = h.gw.App, h.gw.URL
	t.Cleanup(h.logw.stop) // runs after the gateway's own clean-up stopped it
	if !discord.Of(h.cfg).HTTPMode() {
		h.fake.Await(t, waitFor, "the gateway session", func(s *discordtest.Server) bool { return s.ConnectedLocked() })
	}
}

func (h *harness) now() time.Time { return time.Now().Add(time.Duration(h.offset.Load())) }

// stop shuts the gateway down as SIGTERM would (its database stays open
// for the test to read until the test ends).
func (h *harness) stop() { h.gw.Stop() }

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

// cardN waits for the n-th card (1-based) in the channel and returns its
// request id and message, once the dispatcher has recorded its ref.
func (h *harness) cardN(n int) (string, discordtest.Message) {
	h.t.Helper()
	var msg discordtest.Message
	var id string
	h.fake.Await(h.t, waitFor, "a card", func(s *discordtest.Server) bool {
		k := 0
		for _, m := range s.MessagesLocked(channelID) {
			if sub := cardIDRE.FindStringSubmatch(m.Content); sub != nil && !m.Ephemeral {
				id = sub[1]
				if k++; k == n {
					msg = m
					return true
				}
			}
		}
		return false
	})
	deadline := time.Now().Add(waitFor)
	for {
		ref, err := h.app.Service.CardRef(context.Background(), id, "discord")
		if err == nil {
			if ref != channelID+":"+msg.ID {
				h.t.Fatalf("card ref %q; want %s:%s", ref, channelID, msg.ID)
			}
			return id, msg
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("card ref of %s: %v", id, err)
		}
		time.Sleep(10 * time.Millisecond) // the dispatcher records the ref just after the post
	}
}

// cardIDRE finds a card's request id: its last line ends with it, in a
// code span.
var cardIDRE = regexp.MustCompile("`(r[a-z2-7]{10,39})`$")

// customID returns the card's button whose custom id starts with prefix.
func customID(t *testing.T, m discordtest.Message, prefix string) string {
	t.Helper()
	for _, b := range m.Buttons() {
		if strings.HasPrefix(b, prefix) {
			return b
		}
	}
	t.Fatalf("no button %s… on the card (buttons %v)", prefix, m.Buttons())
	return ""
}

// tap presses a button as user, over the websocket or the endpoint, and
// returns the interaction's token (its follow-ups are found by it).
func (h *harness) tap(in discordtest.Interaction) {
	h.t.Helper()
	if discord.Of(h.cfg).HTTPMode() {
		st, body, err := h.fake.PostInteraction(h.client, h.base+"/discord/interactions", in)
		if err != nil || st != http.StatusOK {
			h.t.Fatalf("interaction answered %d %s (%v)", st, body, err)
		}
		return
	}
	h.fake.Tap(h.t, in)
}

// ephemeralWith waits for a private message to the tapper containing want.
func (h *harness) ephemeralWith(want string) {
	h.t.Helper()
	h.fake.Await(h.t, waitFor, "an ephemeral answer with "+want, func(s *discordtest.Server) bool {
		for _, m := range s.MessagesLocked(channelID) {
			if m.Ephemeral && strings.Contains(m.Content, want) {
				return true
			}
		}
		return false
	})
}
