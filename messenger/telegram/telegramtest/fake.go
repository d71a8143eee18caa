// Package telegramtest is a stateful fake of the Telegram Bot API for
// tests: the real go-telegram-bot-api client talks to it over HTTP, as it
// would to api.telegram.org.
//
// It keeps what a test needs to check and what the real API enforces:
// messages by chat and id (text, markup, edits), a queue of updates served
// by long-polling getUpdates (or POSTed to a webhook once setWebhook is
// called), answered callback queries, and every call, recorded and
// readable with a deadline. It refuses what Telegram refuses (malformed
// HTML, texts over 4096 characters, callback data over 64 bytes, editing a
// missing message, an edit that changes nothing, answering a query twice),
// and injects faults on demand: 429 with retry_after, 5xx, HTML error
// pages, hangs, and artificial latency. A later soak test can drive it for
// hours: state is bounded by what the test creates.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// DefaultToken is the bot token the fake accepts unless Options says otherwise.
const DefaultToken = "123:abc"

// MaxText and MaxCallbackData are the Bot API limits the fake enforces,
// like the real one: https://core.telegram.org/bots/api#sendmessage and
// #inlinekeyboardbutton.
const (
	MaxText         = 4096
	MaxCallbackData = 64
)

// Options configures a fake.
type Options struct {
	// Token is the only bot token accepted (DefaultToken when empty);
	// anything else is answered 401 like Telegram does.
	Token string
	// Latency is added to every answer, to measure the gateway's own share
	// of a round trip.
	Latency time.Duration
	// CallBuffer is the capacity of the Calls channel (default 10000).
	// When it is full, calls are still in History and Dropped counts them.
	CallBuffer int
}

// Call is one Bot API call as the fake saw and answered it.
type Call struct {
	Seq         int
	Method      string
	Params      url.Values
	At          time.Time
	Status      int    // HTTP status of the answer
	ErrorCode   int    // error_code when the answer was an error
	Description string // its description
}

// OK reports whether the call succeeded.
func (c Call) OK() bool { return c.Status == http.StatusOK }

// Message is a message as the fake stores it.
type Message struct {
	ChatID   int64
	ID       int
	From     *tgbotapi.User // nil for the bot's own messages
	HTML     string         // the text as sent, when parse_mode was HTML
	Text     string         // the visible text
	Keyboard *tgbotapi.InlineKeyboardMarkup
	ReplyTo  int // the message it answers, 0 for none
	Edits    int
}

// Buttons returns the message's buttons in order, flattened.
func (m Message) Buttons() []tgbotapi.InlineKeyboardButton {
	if m.Keyboard == nil {
		return nil
	}
	var out []tgbotapi.InlineKeyboardButton
	for _, row := range m.Keyboard.InlineKeyboard {
		out = append(out, row...)
	}
	return out
}

// Answer is a recorded answerCallbackQuery.
type Answer struct {
	QueryID   string
	Text      string
	ShowAlert bool
}

type msgKey struct {
	chat int64
	id   int
}

// Server is the fake Bot API.
type Server struct {
	// URL is the fake's base URL; Endpoint is the format the client takes.
	URL string
	// Bot is the bot getMe returns.
	Bot tgbotapi.User

	token   string
	srv     *httptest.Server
	client  *http.Client // delivers webhook updates
	done    chan struct{}
	calls   chan Call
	closeMu sync.Once

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every state change
	latency    time.Duration
	seq        int
	history    []Call
	dropped    int
	messages   map[msgKey]*Message
	nextMsg    map[int64]int
	updates    []tgbotapi.Update
	held       int // getUpdates calls waiting for an update
	nextUpdate int
	queries    map[string]bool // issued callback query ids → answered
	nextQuery  int
	answers    []Answer
	faults     map[string][]*Fault
	webhook    string
	secret     string
	deliveries []int
	commands   []tgbotapi.BotCommand
}

// New starts a fake and closes it when the test ends.
func New(tb testing.TB, o Options) *Server {
	tb.Helper()
	if o.Token == "" {
		o.Token = DefaultToken
	}
	if o.CallBuffer <= 0 {
		o.CallBuffer = 10000
	}
	s := &Server{
		Bot:   tgbotapi.User{ID: 999000, IsBot: true, FirstName: "Gateway", UserName: "gateway_test_bot"},
		token: o.Token, latency: o.Latency, done: make(chan struct{}), calls: make(chan Call, o.CallBuffer),
		changed: make(chan struct{}), messages: map[msgKey]*Message{}, nextMsg: map[int64]int{},
		nextUpdate: 1000, queries: map[string]bool{}, faults: map[string][]*Fault{},
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.Close)
	return s
}

// Endpoint is the API endpoint format for tgbotapi.NewBotAPIWithClient
// and telegram.api_endpoint: URL + "/bot%s/%s".
func (s *Server) Endpoint() string { return s.URL + "/bot%s/%s" }

// Close releases held calls and stops the server. It is safe to call twice.
func (s *Server) Close() {
	s.closeMu.Do(func() {
		close(s.done)
		s.srv.Close()
		s.client.CloseIdleConnections()
	})
}

// Calls is every call, in order, as it is answered. See Options.CallBuffer.
func (s *Server) Calls() <-chan Call { return s.calls }

// History returns a copy of every call so far.
func (s *Server) History() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.history)
}

// Dropped counts calls that found the Calls channel full.
func (s *Server) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// CallsTo returns the calls of one method so far.
func (s *Server) CallsTo(method string) []Call {
	var out []Call
	for _, c := range s.History() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitFor returns the first call, past or future, for which match is true,
// and fails the test if none comes within d.
func (s *Server) WaitFor(tb testing.TB, d time.Duration, what string, match func(Call) bool) Call {
	tb.Helper()
	c, ok := s.Await(d, match)
	if !ok {
		tb.Fatalf("telegramtest: no %s within %s; calls: %s", what, d, s.summary())
	}
	return c
}

// Await is WaitFor without a test: it reports whether a matching call came.
func (s *Server) Await(d time.Duration, match func(Call) bool) (Call, bool) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	seen := 0
	for {
		s.mu.Lock()
		for _, c := range s.history[seen:] {
			if match(c) {
				s.mu.Unlock()
				return c, true
			}
		}
		seen = len(s.history)
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return Call{}, false
		case <-s.done:
			return Call{}, false
		}
	}
}

// WaitUntil waits until cond, evaluated on every change of the fake's
// state, is true, and fails the test after d.
func (s *Server) WaitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond): // cond may depend on more than the fake
		case <-deadline.C:
			tb.Fatalf("telegramtest: not %s within %s; calls: %s", what, d, s.summary())
		}
	}
}

func (s *Server) summary() string {
	var b strings.Builder
	for _, c := range s.History() {
		fmt.Fprintf(&b, "\n  #%d %s → %d %s", c.Seq, c.Method, c.Status, c.Description)
	}
	return b.String()
}

// changedLocked wakes everyone waiting on the fake's state; s.mu held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Message returns a stored message.
func (s *Server) Message(chatID int64, id int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[msgKey{chatID, id}]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Messages returns the messages of a chat, oldest first: the bot's and
// the users'.
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for k, m := range s.messages {
		if k.chat == chatID {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b Message) int { return a.ID - b.ID })
	return out
}

// BotMessages returns the messages the bot sent to any chat, oldest first.
func (s *Server) BotMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.From == nil {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b Message) int {
		if a.ChatID != b.ChatID {
			return int(a.ChatID - b.ChatID)
		}
		return a.ID - b.ID
	})
	return out
}

// Answers returns the answers given to a callback query, in order.
func (s *Server) Answers(queryID string) []Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Answer
	for _, a := range s.answers {
		if a.QueryID == queryID {
			out = append(out, a)
		}
	}
	return out
}

// Commands returns the commands registered with setMyCommands.
func (s *Server) Commands() []tgbotapi.BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// Webhook returns the URL and secret_token set with setWebhook ("" when
// polling).
func (s *Server) Webhook() (url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook, s.secret
}

// Deliveries returns the HTTP statuses the webhook answered, in order.
func (s *Server) Deliveries() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.deliveries)
}

// Held counts the getUpdates calls the fake holds, waiting for an update.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

// Pending counts queued updates not yet confirmed by a getUpdates offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// Read the form before anything blocks: an unread body keeps the
	// request's context alive after the client hangs up.
	_ = r.ParseForm()
	method, ok := s.method(r.URL.Path)
	call := Call{Method: method, Params: r.PostForm, At: time.Now()}
	var result any
	var aerr *apiError
	var htmlPage bool
	switch {
	case !ok:
		aerr = &apiError{status: http.StatusUnauthorized, desc: "Unauthorized"}
	default:
		f := s.takeFault(method)
		s.mu.Lock()
		lat := s.latency
		s.mu.Unlock()
		if f != nil && f.Delay > 0 {
			lat += f.Delay
		}
		switch {
		case f != nil && f.Hang:
			select {
			case <-r.Context().Done():
			case <-s.done:
			}
			s.record(call, 0, 0, "hung up")
			return
		case f != nil && f.Status != 0:
			aerr = &apiError{status: f.Status, retryAfter: f.RetryAfter, desc: f.Description}
			if aerr.desc == "" {
				aerr.desc = faultDescription(f)
			}
			htmlPage = f.HTML
		default:
			result, aerr = s.call(r.Context(), method, r.PostForm)
		}
		if !s.sleep(r.Context(), lat) {
			s.record(call, 0, 0, "client gone")
			return
		}
	}
	if aerr != nil {
		s.record(call, aerr.status, aerr.status, aerr.desc)
		if htmlPage {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(aerr.status)
			fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", aerr.status, http.StatusText(aerr.status))
			return
		}
		body := map[string]any{"ok": false, "error_code": aerr.status, "description": aerr.desc}
		if aerr.retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": aerr.retryAfter}
		}
		writeJSON(w, aerr.status, body)
		return
	}
	s.record(call, http.StatusOK, 0, "")
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// method checks the token in /bot<token>/<method> and returns the method.
func (s *Server) method(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/bot")
	if !ok {
		return "", false
	}
	tok, method, ok := strings.Cut(rest, "/")
	return method, ok && tok == s.token && method != ""
}

func (s *Server) record(c Call, status, code int, desc string) {
	s.mu.Lock()
	s.seq++
	c.Seq, c.Status, c.ErrorCode, c.Description = s.seq, status, code, desc
	s.history = append(s.history, c)
	select {
	case s.calls <- c:
	default:
		s.dropped++
	}
	s.changedLocked()
	s.mu.Unlock()
}
