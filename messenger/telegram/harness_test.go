package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

var long = flag.Bool("telegram.long", false, "run the long outage tests (a 60 s Bot API outage)")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	botToken   = telegramtest.DefaultToken
	chatID     = int64(-100123)
	agentToken = "agent-token-a1"
	adminToken = "admin-token-boss"
	waitLong   = 20 * time.Second
)

// The people in the chat.
var (
	roberto = tgbotapi.User{ID: 42, FirstName: "Roberto", UserName: "roberto"}
	anna    = tgbotapi.User{ID: 43, FirstName: "Anna"}
	mallory = tgbotapi.User{ID: 666, FirstName: "Mallory"}
)

// clock is wall time plus an offset a test can advance (expiry, the note
// window) without sleeping.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// harness is a whole gateway (real HTTP server, SQLite file, approval
// service, Telegram adapter on the real library) in front of a fake Bot API.
type harness struct {
	t           testing.TB
	fake        *telegramtest.Server
	cfg         config.Config
	clock       *clock
	logs        *syncBuffer
	client      *http.Client
	callTimeout time.Duration
	pollTimeout time.Duration

	app *gateway.App
	url string
	ln  net.Listener // the first start's, made before the options
	gw  *gatewaytest.Gateway
}

type option func(*harness)

// locale is how the gateway under test speaks: its zone, its clock.
func (h *harness) locale() locale.Locale {
	return locale.New(locale.Lang(telegram.Of(h.cfg).Language), h.cfg.Server.Zone(), h.clock.Now)
}

// inLanguage sets telegram.language.
func inLanguage(lang string) option {
	return func(h *harness) { telegram.Of(h.cfg).Language = lang }
}

// webhookMode makes the gateway register a webhook on its own listener.
func webhookMode(secret string) option {
	return func(h *harness) {
		telegram.Of(h.cfg).WebhookURL = h.url + "/telegram/webhook"
		telegram.Of(h.cfg).WebhookSecretEnv = "TELEGRAM_WEBHOOK_SECRET"
		telegram.Of(h.cfg).WebhookSecret = secret
	}
}

func newHarness(t testing.TB, opts ...option) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{
		t: t, fake: telegramtest.New(t, telegramtest.Options{}), clock: &clock{}, logs: &syncBuffer{},
		client:      &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		callTimeout: 2 * time.Second, pollTimeout: 30 * time.Second,
	}
	cfg := config.Default()
	if err := cfg.AddSections(telegram.Section); err != nil {
		panic(err)
	}
	cfg.Server.Timezone = "Asia/Tokyo" // not the machine's zone, and no summer time: cards must say JST
	cfg.Storage.Path = filepath.Join(dir, "gateway.db")
	cfg.Vaglio.LogDir = filepath.Join(dir, "vaglio")
	a1 := config.NewAgent("a1")
	a1.Token, a1.Notify = agentToken, []string{telegram.Name, config.NotifyWeb}
	a1.Rate, a1.RateCount = "", 0 // the benchmark asks thousands of times
	boss := config.NewAgent("boss")
	boss.Token, boss.Admin = adminToken, true
	cfg.Agents = []config.Agent{a1, boss}
	*telegram.Of(cfg) = telegram.Config{TokenEnv: "TELEGRAM_BOT_TOKEN", Token: botToken, ChatID: chatID,
		Chat: messenger.Chat[int64]{Approvers: []int64{roberto.ID, anna.ID}}, APIEndpoint: h.fake.Endpoint()}
	h.cfg = cfg
	h.listen()
	for _, o := range opts {
		o(h)
	}
	h.start()
	t.Cleanup(func() {
		h.stop()
		h.client.CloseIdleConnections()
		h.fake.Close()
		logs := h.logs.String()
		if strings.Contains(logs, botToken) {
			t.Errorf("the bot token reached the log:\n%s", logs)
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	})
	return h
}

func (h *harness) listen() {
	h.ln = gatewaytest.Listen(h.t)
	h.url = "http://" + h.ln.Addr().String()
}

// start builds and serves the app: the first time on the listener made
// by newHarness, after a stop on the same address.
func (h *harness) start() {
	h.t.Helper()
	log := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := gateway.AppOptions{
		Logger: log, Now: h.clock.Now,
		Messengers: []messenger.Factory{telegram.Factory(telegram.Options{
			Config: *telegram.Of(h.cfg), Logger: log, Location: h.cfg.Server.Zone(), Now: h.clock.Now,
			GrantTTL: time.Duration(h.cfg.Policy.GrantTTL), PollTimeout: h.pollTimeout, CallTimeout: h.callTimeout,
			PublicURL: h.cfg.Web.PublicURL, LinkBase: gateway.LinkBase(h.cfg),
		})},
	}
	if h.gw == nil {
		h.gw = gatewaytest.StartOn(h.t, h.ln, h.cfg, opts)
	} else {
		h.gw = h.gw.Restart(h.t, h.cfg, opts)
	}
	h.app = h.gw.App
}

// stop shuts the gateway down and closes its database; it returns how
// long the shutdown took.
func (h *harness) stop() time.Duration {
	if h.gw == nil {
		return 0
	}
	start := time.Now()
	h.gw.Close()
	took := time.Since(start)
	h.client.CloseIdleConnections()
	return took
}

func (h *harness) restart() {
	h.t.Helper()
	h.stop()
	h.start()
}

// do calls the gateway's API and decodes a request object.
func (h *harness) do(method, path, token string, body any) (int, approvals.Request) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.url+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r approvals.Request
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, &r); err != nil {
			h.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return resp.StatusCode, r
}

// ask posts a request as agent a1 and waits up to wait for its answer.
func (h *harness) ask(capability, target, wait string) (int, approvals.Request) {
	h.t.Helper()
	return h.do("POST", "/v1/requests?wait="+wait, agentToken, map[string]any{
		"capability": capability, "target": target, "intent": "tidy the notes", "executor": "notes_tidy",
	})
}

// pending posts a request that needs a person and returns it.
func (h *harness) pending(capability, target string) approvals.Request {
	h.t.Helper()
	code, r := h.ask(capability, target, "0s")
	if code != http.StatusAccepted || r.Status != approvals.StatusPending {
		h.t.Fatalf("ask %s %s: %d %s, want 202 pending", capability, target, code, r.Status)
	}
	return r
}

// answer is what an agent long-polling for a request gets.
type answer struct {
	code int
	r    approvals.Request
	at   time.Time
}

// await long-polls for a request in the background, like a waiting agent.
func (h *harness) await(id string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		code, r := h.do("GET", "/v1/requests/"+id+"?wait=30s", agentToken, nil)
		ch <- answer{code, r, time.Now()}
	}()
	return ch
}

func (h *harness) get(id string) approvals.Request {
	h.t.Helper()
	code, r := h.do("GET", "/v1/requests/"+id, agentToken, nil)
	if code != http.StatusOK && code != http.StatusAccepted {
		h.t.Fatalf("get %s: %d", id, code)
	}
	return r
}

// card waits for the card of request id in the approvals chat, and for
// the service to have recorded its message id: what a person sees, a
// moment later. (The moment in between is at-least-once territory: a
// restart there posts the card again.)
func (h *harness) card(id string) telegramtest.Message {
	h.t.Helper()
	var card telegramtest.Message
	h.fake.WaitUntil(h.t, waitLong, "card of "+id+" posted", func() bool {
		for _, m := range h.fake.Messages(chatID) {
			if m.From == nil && strings.Contains(m.Text, id) && m.ReplyTo == 0 {
				card = m
				return true
			}
		}
		return false
	})
	h.persisted(id)
	return card
}

// persisted waits until the service has recorded the card's message id
// (a moment after the message exists in the chat).
func (h *harness) persisted(id string) {
	h.t.Helper()
	h.fake.WaitUntil(h.t, waitLong, "card ref of "+id+" recorded", func() bool {
		_, err := h.app.Service.CardRef(context.Background(), id, telegram.Name)
		return err == nil
	})
}

// cardShows waits until the card's text contains want and returns it.
func (h *harness) cardShows(m telegramtest.Message, want string) telegramtest.Message {
	h.t.Helper()
	var got telegramtest.Message
	h.fake.WaitUntil(h.t, waitLong, fmt.Sprintf("card %d showing %q", m.ID, want), func() bool {
		got, _ = h.fake.Message(m.ChatID, m.ID)
		return strings.Contains(got.Text, want)
	})
	return got
}

// keyboardShows waits until the card's keyboard has a button labelled want.
func (h *harness) keyboardShows(m telegramtest.Message, want string) telegramtest.Message {
	h.t.Helper()
	var got telegramtest.Message
	h.fake.WaitUntil(h.t, waitLong, fmt.Sprintf("card %d with a button %q", m.ID, want), func() bool {
		got, _ = h.fake.Message(m.ChatID, m.ID)
		return slices.Contains(buttonLabels(got), want)
	})
	return got
}

// answerOf waits for the answer to a callback query.
func (h *harness) answerOf(queryID string) telegramtest.Answer {
	h.t.Helper()
	var a []telegramtest.Answer
	h.fake.WaitUntil(h.t, waitLong, "answer to "+queryID, func() bool {
		a = h.fake.Answers(queryID)
		return len(a) > 0
	})
	if len(a) != 1 {
		h.t.Errorf("query %s answered %d times", queryID, len(a))
	}
	return a[0]
}

// replyTo waits for the bot's reply to a user's message and returns its text.
func (h *harness) replyTo(chat int64, msgID int) string {
	h.t.Helper()
	var text string
	h.fake.WaitUntil(h.t, waitLong, fmt.Sprintf("reply to message %d", msgID), func() bool {
		for _, m := range h.fake.Messages(chat) {
			if m.From == nil && m.ReplyTo == msgID {
				text = m.Text
				return true
			}
		}
		return false
	})
	return text
}

func buttonLabels(m telegramtest.Message) []string {
	var out []string
	for _, b := range m.Buttons() {
		out = append(out, b.Text)
	}
	return out
}

func (h *harness) countRows(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.app.DB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}
