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
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
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

// Fault is a failure to inject on calls of one method.
type Fault struct {
	// Status is the HTTP status and error_code: 429, 500, 502 …
	Status int
	// RetryAfter is parameters.retry_after, in seconds (for 429).
	RetryAfter int
	// Description overrides the error description.
	Description string
	// HTML answers with an HTML page instead of JSON, as a proxy in front
	// of the API would.
	HTML bool
	// Hang holds the call until the client gives up or the fake closes.
	Hang bool
	// Delay holds the call this long before answering (normally, when
	// Status is 0).
	Delay time.Duration
	// Times is how many calls the fault hits; 0 means every call.
	Times int
	// Until ends the fault at this time; zero means no end.
	Until time.Time
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

// SetLatency changes the artificial latency of every answer.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// Inject adds a fault on method ("" for every method but getUpdates,
// whose faults must be named explicitly so a broad outage does not also
// stall the test's own update delivery).
func (s *Server) Inject(method string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], &f)
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]*Fault{}
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

// Pending counts queued updates not yet confirmed by a getUpdates offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Callback builds the callback_query update of a user tapping an inline
// button with data on a message (a stored one, or one the fake does not
// know, for forged callbacks), without delivering it: a test can then
// deliver it twice. It has its update id and a fresh query id.
func (s *Server) Callback(from tgbotapi.User, chatID int64, messageID int, data string) tgbotapi.Update {
	u := s.callback(from, chatID, messageID, data)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdate++
	u.UpdateID = s.nextUpdate
	return u
}

// callback is Callback without an update id (Enqueue gives it one).
func (s *Server) callback(from tgbotapi.User, chatID int64, messageID int, data string) tgbotapi.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextQuery++
	qid := fmt.Sprintf("q%d", s.nextQuery)
	s.queries[qid] = false
	msg := &tgbotapi.Message{MessageID: messageID, Chat: &tgbotapi.Chat{ID: chatID, Type: chatType(chatID)},
		From: &s.Bot, Date: int(time.Now().Unix())}
	if m, ok := s.messages[msgKey{chatID, messageID}]; ok {
		msg.Text, msg.ReplyMarkup = m.Text, m.Keyboard
	}
	return tgbotapi.Update{CallbackQuery: &tgbotapi.CallbackQuery{
		ID: qid, From: &from, Message: msg, ChatInstance: strconv.FormatInt(chatID, 10), Data: data,
	}}
}

// Press simulates a user tapping an inline button: it delivers the
// callback update and returns the query id. The update id is given as the
// update is queued, in one step, as Telegram does: two taps at the same
// moment are queued in the order of their ids, so a getUpdates offset that
// confirms the later one never drops the earlier one unseen.
func (s *Server) Press(from tgbotapi.User, chatID int64, messageID int, data string) string {
	u := s.callback(from, chatID, messageID, data)
	s.Enqueue(u)
	return u.CallbackQuery.ID
}

// PressButton taps the button of a stored message whose label contains
// label, and returns the query id; it fails the test when there is none.
func (s *Server) PressButton(tb testing.TB, from tgbotapi.User, chatID int64, messageID int, label string) string {
	tb.Helper()
	m, ok := s.Message(chatID, messageID)
	if !ok {
		tb.Fatalf("telegramtest: no message %d in chat %d", messageID, chatID)
	}
	for _, b := range m.Buttons() {
		if strings.Contains(b.Text, label) && b.CallbackData != nil {
			return s.Press(from, chatID, messageID, *b.CallbackData)
		}
	}
	tb.Fatalf("telegramtest: message %d has no button %q (buttons: %v)", messageID, label, m.Buttons())
	return ""
}

// Say simulates a user writing text in a chat, as a reply to replyTo when
// it is not 0. A leading /command gets its bot_command entity, as Telegram
// adds it. It returns the new message's id.
func (s *Server) Say(from tgbotapi.User, chatID int64, text string, replyTo int) int {
	s.mu.Lock()
	s.nextMsg[chatID]++
	id := s.nextMsg[chatID]
	s.messages[msgKey{chatID, id}] = &Message{ChatID: chatID, ID: id, From: &from, Text: text, ReplyTo: replyTo}
	msg := &tgbotapi.Message{MessageID: id, From: &from, Chat: &tgbotapi.Chat{ID: chatID, Type: chatType(chatID)},
		Date: int(time.Now().Unix()), Text: text}
	if strings.HasPrefix(text, "/") {
		n, _, _ := strings.Cut(text, " ")
		msg.Entities = []tgbotapi.MessageEntity{{Type: "bot_command", Offset: 0, Length: utf16Len(n)}}
	}
	if replyTo != 0 {
		if m, ok := s.messages[msgKey{chatID, replyTo}]; ok {
			msg.ReplyToMessage = &tgbotapi.Message{MessageID: m.ID, Chat: msg.Chat, Text: m.Text, From: m.From,
				ReplyMarkup: m.Keyboard}
			if m.From == nil {
				msg.ReplyToMessage.From = &s.Bot
			}
		} else {
			msg.ReplyToMessage = &tgbotapi.Message{MessageID: replyTo, Chat: msg.Chat}
		}
	}
	s.changedLocked()
	s.mu.Unlock()
	s.Enqueue(tgbotapi.Update{Message: msg})
	return id
}

func chatType(id int64) string {
	if id < 0 {
		return "supergroup"
	}
	return "private"
}

// Enqueue delivers an update: to the webhook when one is set (POSTed now,
// with the secret), else to the getUpdates queue. An update with
// UpdateID 0 gets the next id; a non-zero id is kept, so a test can
// deliver the same update twice. It returns the update id.
func (s *Server) Enqueue(u tgbotapi.Update) int {
	s.mu.Lock()
	if u.UpdateID == 0 {
		s.nextUpdate++
		u.UpdateID = s.nextUpdate
	}
	hook, secret := s.webhook, s.secret
	if hook == "" {
		s.updates = append(s.updates, u)
		s.changedLocked()
	}
	s.mu.Unlock()
	if hook != "" {
		status := s.deliver(hook, secret, u)
		s.mu.Lock()
		s.deliveries = append(s.deliveries, status)
		s.changedLocked()
		s.mu.Unlock()
	}
	return u.UpdateID
}

// deliver POSTs one update to the webhook like Telegram: JSON body, the
// secret in X-Telegram-Bot-Api-Secret-Token. It returns the HTTP status
// (0 when the webhook could not be reached).
func (s *Server) deliver(hook, secret string, u tgbotapi.Update) int {
	body, _ := json.Marshal(u)
	req, err := http.NewRequest(http.MethodPost, hook, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// apiError is an error answer of the Bot API.
type apiError struct {
	status     int
	desc       string
	retryAfter int
}

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, desc: "Bad Request: " + fmt.Sprintf(format, args...)}
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

func faultDescription(f *Fault) string {
	switch f.Status {
	case http.StatusTooManyRequests:
		return fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter)
	case http.StatusInternalServerError:
		return "Internal Server Error"
	}
	return http.StatusText(f.Status)
}

func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
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

func (s *Server) takeFault(method string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := []string{method}
	if method != "getUpdates" {
		keys = append(keys, "")
	}
	now := time.Now()
	for _, k := range keys {
		for i, f := range s.faults[k] {
			if !f.Until.IsZero() && now.After(f.Until) {
				continue
			}
			if f.Times > 0 {
				f.Times--
				if f.Times == 0 {
					s.faults[k] = slices.Delete(s.faults[k], i, i+1)
				}
			}
			return f
		}
	}
	return nil
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

// call performs one API method on the fake's state.
func (s *Server) call(ctx context.Context, method string, p url.Values) (any, *apiError) {
	switch method {
	case "getMe":
		return s.Bot, nil
	case "getUpdates":
		return s.getUpdates(ctx, p)
	case "sendMessage":
		return s.sendMessage(p)
	case "editMessageText":
		return s.editMessageText(p)
	case "editMessageReplyMarkup":
		return s.editMessageReplyMarkup(p)
	case "answerCallbackQuery":
		return s.answerCallbackQuery(p)
	case "setMyCommands":
		var cmds []tgbotapi.BotCommand
		if err := json.Unmarshal([]byte(p.Get("commands")), &cmds); err != nil {
			return nil, badRequest("can't parse commands JSON object")
		}
		s.mu.Lock()
		s.commands = cmds
		s.mu.Unlock()
		return true, nil
	case "setWebhook":
		s.mu.Lock()
		s.webhook, s.secret = p.Get("url"), p.Get("secret_token")
		s.mu.Unlock()
		return true, nil
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook, s.secret = "", ""
		s.mu.Unlock()
		return true, nil
	case "getWebhookInfo":
		s.mu.Lock()
		defer s.mu.Unlock()
		return map[string]any{"url": s.webhook, "pending_update_count": len(s.updates)}, nil
	}
	return nil, &apiError{status: http.StatusNotFound, desc: "Not Found"}
}

func (s *Server) getUpdates(ctx context.Context, p url.Values) (any, *apiError) {
	offset, _ := strconv.Atoi(p.Get("offset"))
	limit, _ := strconv.Atoi(p.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p.Get("timeout"))
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.webhook != "" {
			s.mu.Unlock()
			return nil, &apiError{status: http.StatusConflict,
				desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
		}
		if offset != 0 { // confirms every update before offset
			s.updates = slices.DeleteFunc(s.updates, func(u tgbotapi.Update) bool { return u.UpdateID < offset })
		}
		if len(s.updates) > 0 {
			out := slices.Clone(s.updates[:min(limit, len(s.updates))])
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			return []tgbotapi.Update{}, nil
		case <-ctx.Done():
			return []tgbotapi.Update{}, nil
		case <-s.done:
			return []tgbotapi.Update{}, nil
		}
	}
}

func (s *Server) sendMessage(p url.Values) (any, *apiError) {
	chat, err := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	if err != nil || chat == 0 {
		return nil, badRequest("chat not found")
	}
	htmlText, text, kb, aerr := content(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextMsg[chat]++
	m := &Message{ChatID: chat, ID: s.nextMsg[chat], HTML: htmlText, Text: text, Keyboard: kb}
	m.ReplyTo, _ = strconv.Atoi(p.Get("reply_to_message_id"))
	s.messages[msgKey{chat, m.ID}] = m
	return s.wire(m), nil
}

func (s *Server) target(p url.Values) (*Message, *apiError) {
	chat, _ := strconv.ParseInt(p.Get("chat_id"), 10, 64)
	id, _ := strconv.Atoi(p.Get("message_id"))
	m, ok := s.messages[msgKey{chat, id}]
	if !ok {
		return nil, badRequest("message to edit not found")
	}
	if m.From != nil {
		return nil, badRequest("message can't be edited")
	}
	return m, nil
}

func (s *Server) editMessageText(p url.Values) (any, *apiError) {
	htmlText, text, kb, aerr := content(p)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.target(p)
	if aerr != nil {
		return nil, aerr
	}
	if m.Text == text && m.HTML == htmlText && sameKeyboard(m.Keyboard, kb) {
		return nil, badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.HTML, m.Text, m.Keyboard = htmlText, text, kb
	m.Edits++
	return s.wire(m), nil
}

func (s *Server) editMessageReplyMarkup(p url.Values) (any, *apiError) {
	kb, aerr := keyboard(p.Get("reply_markup"))
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.target(p)
	if aerr != nil {
		return nil, aerr
	}
	if sameKeyboard(m.Keyboard, kb) {
		return nil, badRequest("message is not modified")
	}
	m.Keyboard = kb
	m.Edits++
	return s.wire(m), nil
}

func (s *Server) answerCallbackQuery(p url.Values) (any, *apiError) {
	qid := p.Get("callback_query_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	answered, issued := s.queries[qid]
	if !issued || answered {
		return nil, badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if len(p.Get("text")) > 200 {
		return nil, badRequest("MESSAGE_TOO_LONG")
	}
	s.queries[qid] = true
	s.answers = append(s.answers, Answer{QueryID: qid, Text: p.Get("text"), ShowAlert: p.Get("show_alert") == "true"})
	return true, nil
}

// wire is a stored message as the API returns it; s.mu held.
func (s *Server) wire(m *Message) tgbotapi.Message {
	return tgbotapi.Message{MessageID: m.ID, From: &s.Bot, Chat: &tgbotapi.Chat{ID: m.ChatID, Type: chatType(m.ChatID)},
		Date: int(time.Now().Unix()), Text: m.Text, ReplyMarkup: m.Keyboard}
}

// content validates the text, parse mode and keyboard of a send or edit.
func content(p url.Values) (htmlText, text string, kb *tgbotapi.InlineKeyboardMarkup, aerr *apiError) {
	raw := p.Get("text")
	switch mode := p.Get("parse_mode"); mode {
	case "HTML":
		v, err := VisibleText(raw)
		if err != nil {
			return "", "", nil, badRequest("can't parse entities: %v", err)
		}
		htmlText, text = raw, v
	case "":
		text = raw
	default:
		return "", "", nil, badRequest("unsupported parse_mode %q in this fake", mode)
	}
	if strings.TrimSpace(text) == "" {
		return "", "", nil, badRequest("message text is empty")
	}
	if utf16Len(text) > MaxText {
		return "", "", nil, badRequest("message is too long")
	}
	kb, aerr = keyboard(p.Get("reply_markup"))
	return htmlText, text, kb, aerr
}

func keyboard(raw string) (*tgbotapi.InlineKeyboardMarkup, *apiError) {
	if raw == "" {
		return nil, nil
	}
	var kb tgbotapi.InlineKeyboardMarkup
	if err := json.Unmarshal([]byte(raw), &kb); err != nil {
		return nil, badRequest("can't parse reply keyboard markup JSON object")
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.CallbackData != nil && (len(*b.CallbackData) == 0 || len(*b.CallbackData) > MaxCallbackData) {
				return nil, badRequest("BUTTON_DATA_INVALID")
			}
			if b.Text == "" {
				return nil, badRequest("text buttons are unallowed in the inline keyboard")
			}
		}
	}
	if len(kb.InlineKeyboard) == 0 {
		return nil, nil // an empty keyboard removes the buttons
	}
	return &kb, nil
}

func sameKeyboard(a, b *tgbotapi.InlineKeyboardMarkup) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// htmlTags are the tags Telegram's HTML parse mode accepts
// (https://core.telegram.org/bots/api#html-style).
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true, "strike": true,
	"del": true, "code": true, "pre": true, "a": true, "span": true, "tg-spoiler": true, "blockquote": true,
}

// VisibleText parses Telegram HTML strictly: known tags, balanced, and the
// entities Telegram knows (&lt; &gt; &amp; &quot; and numeric ones). It
// returns the text a person sees.
func VisibleText(s string) (string, error) {
	d := xml.NewDecoder(strings.NewReader("<telegram-root>" + s + "</telegram-root>"))
	d.Strict = true
	d.Entity = map[string]string{} // only the XML predefined ones; &apos; is refused below
	if strings.Contains(s, "&apos;") {
		return "", errors.New("unsupported entity &apos;")
	}
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if n := tok.Name.Local; n != "telegram-root" && !htmlTags[n] {
				return "", fmt.Errorf("unsupported start tag %q", n)
			}
		case xml.CharData:
			b.Write(tok)
		case xml.Comment, xml.ProcInst, xml.Directive:
			return "", errors.New("unsupported markup")
		}
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
