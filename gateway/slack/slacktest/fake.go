// Package slacktest is a stateful fake of the parts of the Slack Web API and
// Socket Mode the gateway uses, for tests that drive the real slack-go
// client. It keeps the messages it was sent (so chat.update of an unknown
// message fails as on Slack), records every call on a channel the test reads
// with a deadline, and answers 429 with Retry-After or 500 on request.
//
// slack-go's own slacktest is not used: it has no chat.update and leaks a
// goroutine per post, which goleak reports.
package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// Options configure a fake. Zero values accept every token.
type Options struct {
	// BotToken, when set, is the only token Web API methods accept
	// (others answer invalid_auth).
	BotToken string
	// AppToken, when set, is the only token apps.connections.open accepts.
	AppToken string
	// PingInterval is how often the Socket Mode endpoint sends a WebSocket
	// ping (slack-go reconnects when pings stop). Default one second.
	PingInterval time.Duration
	// CallBuffer is the capacity of Calls. Default 10,000; when it is full
	// further calls are only kept in History.
	CallBuffer int
}

// Call is one request the fake received.
type Call struct {
	// Method is the Web API method ("chat.postMessage"), "response_url" for
	// a post to a response URL, "socket.connect" for a new Socket Mode
	// connection, or "socket.ack" for an envelope acknowledgement.
	Method string
	// Form holds the fields of form-encoded calls (chat.*).
	Form url.Values
	// Body is the raw body of JSON calls and socket acks.
	Body []byte
	// Token is the bearer or form token the call carried.
	Token string
	// Status is the HTTP status the fake answered; Error the Slack error
	// code when it answered ok:false.
	Status int
	Error  string
	At     time.Time
}

// Text returns the call's text field (form or JSON).
func (c Call) Text() string {
	if c.Form != nil {
		return c.Form.Get("text")
	}
	var v struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c.Body, &v)
	return v.Text
}

// Blocks decodes the call's blocks (the form field of chat.* calls, or the
// blocks of a JSON body or of a views.publish view) with slack-go's own
// decoder, so tests inspect the same types the renderer built.
func (c Call) Blocks() ([]slack.Block, error) {
	var raw string
	if c.Form != nil {
		raw = c.Form.Get("blocks")
	} else {
		var v struct {
			Blocks json.RawMessage `json:"blocks"`
			View   struct {
				Blocks json.RawMessage `json:"blocks"`
			} `json:"view"`
		}
		if err := json.Unmarshal(c.Body, &v); err != nil {
			return nil, err
		}
		raw = string(v.Blocks)
		if raw == "" {
			raw = string(v.View.Blocks)
		}
	}
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var bs slack.Blocks
	if err := json.Unmarshal([]byte(raw), &bs); err != nil {
		return nil, err
	}
	return bs.BlockSet, nil
}

// Buttons lists the action ids and values of every button in the call's
// blocks (actions blocks and section accessories).
func (c Call) Buttons() (actionIDs, values []string) {
	bs, _ := c.Blocks()
	for _, b := range bs {
		switch b := b.(type) {
		case *slack.ActionBlock:
			for _, e := range b.Elements.ElementSet {
				if btn, ok := e.(*slack.ButtonBlockElement); ok {
					actionIDs, values = append(actionIDs, btn.ActionID), append(values, btn.Value)
				}
			}
		case *slack.SectionBlock:
			if b.Accessory != nil && b.Accessory.ButtonElement != nil {
				btn := b.Accessory.ButtonElement
				actionIDs, values = append(actionIDs, btn.ActionID), append(values, btn.Value)
			}
		}
	}
	return actionIDs, values
}

// Message is a message the fake holds, as chat.postMessage left it and
// chat.update changed it.
type Message struct {
	Channel, TS, Text string
	Blocks            string // JSON
	Updates           int
	// ThreadTS is the ts of the message this one replies to in a thread
	// (chat.postMessage with thread_ts), "" for a message in the channel.
	ThreadTS string
}

// Failure is an answer to inject instead of the normal one.
type Failure struct {
	Status     int    // HTTP status, e.g. 429 or 500 (0 = 200)
	RetryAfter int    // seconds, sent as Retry-After
	Error      string // Slack error code for an ok:false answer with status 200
	// Delay holds the answer back this long (a slow Slack). With no
	// Status and no Error the normal answer follows.
	Delay time.Duration
}

// slow reports whether f only delays the normal answer.
func (f Failure) slow() bool { return f.Status == 0 && f.Error == "" }

// Server is the fake. Create with New; Close when done.
type Server struct {
	// URL is the base URL; the Web API base for slack.OptionAPIURL is URL+"/".
	URL string
	// Calls receives every call, in order. Read it with Wait.
	Calls chan Call

	opts Options
	ts   *httptest.Server

	mu       sync.Mutex
	history  []Call
	messages map[string]*Message // channel + ":" + ts
	views    map[string]json.RawMessage
	groups   map[string][]string // user group id → member ids
	failures map[string][]Failure
	nextTS   int64
	sockets  map[*socketConn]struct{}
	envSeq   int
	closed   bool

	bmu     sync.Mutex
	backlog []Call // read from Calls by Wait but not yet taken
	wg      sync.WaitGroup
}

// New starts a fake on 127.0.0.1.
func New(o Options) *Server {
	if o.PingInterval <= 0 {
		o.PingInterval = time.Second
	}
	if o.CallBuffer <= 0 {
		o.CallBuffer = 10000
	}
	s := &Server{
		Calls: make(chan Call, o.CallBuffer), opts: o, messages: map[string]*Message{},
		views: map[string]json.RawMessage{}, groups: map[string][]string{}, failures: map[string][]Failure{}, nextTS: 1700000000000100,
		sockets: map[*socketConn]struct{}{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /socket", s.socket)
	mux.HandleFunc("POST /response/{id}", s.responseURL)
	mux.HandleFunc("POST /{method}", s.api)
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL
	return s
}

// APIURL is the value for slack.api_url (with the trailing slash slack-go needs).
func (s *Server) APIURL() string { return s.URL + "/" }

// ResponseURL is a response_url the fake accepts, for payloads a test builds.
func (s *Server) ResponseURL(id string) string { return s.URL + "/response/" + url.PathEscape(id) }

// Close closes the Socket Mode connections and the server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.sockets {
		c.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.ts.Close()
}

// Fail makes the next calls of method answer f, one failure per call, in order.
func (s *Server) Fail(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// History returns every call so far.
func (s *Server) History() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.history...)
}

// Reset forgets the recorded calls (History, and calls not yet taken by
// Wait), so a long-running test keeps its memory bounded. Messages stay.
func (s *Server) Reset() {
	s.mu.Lock()
	s.history = nil
	s.mu.Unlock()
	s.bmu.Lock()
	s.backlog = nil
	s.bmu.Unlock()
	for {
		select {
		case <-s.Calls:
		default:
			return
		}
	}
}

// Count counts the calls of method so far.
func (s *Server) Count(method string) int {
	n := 0
	for _, c := range s.History() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Message returns a held message.
func (s *Server) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.messages[channel+":"+ts]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// SetUserGroup makes a user group (an "S…" id) with these members, as
// usergroups.users.list will answer; calling it again changes the members.
func (s *Server) SetUserGroup(id string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = append([]string(nil), members...)
}

// Replies returns the messages posted in the thread of channel:ts, oldest first.
func (s *Server) Replies(channel, ts string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == ts {
			out = append(out, *m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out
}

// View returns the last Home tab view published for a user.
func (s *Server) View(user string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[user]
	return v, ok
}

// Wait returns the next call of method the test has not yet taken:
// calls of other methods read meanwhile are kept for later Waits, so the
// order in which a test waits for different methods does not matter. It
// fails the test after timeout.
func (s *Server) Wait(t testing.TB, method string, timeout time.Duration) Call {
	t.Helper()
	return s.WaitMatch(t, method, timeout, nil)
}

// WaitMatch is Wait for the next call of method that match accepts; calls
// of method it rejects are dropped (superseded), others kept.
func (s *Server) WaitMatch(t testing.TB, method string, timeout time.Duration, match func(Call) bool) Call {
	t.Helper()
	ok := func(c Call) bool { return c.Method == method && (match == nil || match(c)) }
	s.bmu.Lock()
	var found *Call
	kept := make([]Call, 0, len(s.backlog))
	for _, c := range s.backlog {
		if found == nil && c.Method == method {
			if ok(c) {
				found = &c
			}
			continue // taken, or superseded
		}
		kept = append(kept, c)
	}
	s.backlog = kept
	s.bmu.Unlock()
	if found != nil {
		return *found
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case c := <-s.Calls:
			if ok(c) {
				return c
			}
			if c.Method != method {
				s.bmu.Lock()
				s.backlog = append(s.backlog, c)
				s.bmu.Unlock()
			}
		case <-deadline.C:
			t.Fatalf("slacktest: no %s call within %s", method, timeout)
			return Call{}
		}
	}
}

// Quiet fails the test if a call of method comes (or came, untaken) within d.
func (s *Server) Quiet(t testing.TB, method string, d time.Duration) {
	t.Helper()
	check := func(c Call) {
		if c.Method == method {
			t.Fatalf("slacktest: unexpected %s call: %s", method, c.Text())
		}
	}
	s.bmu.Lock()
	for _, c := range s.backlog {
		check(c)
	}
	s.bmu.Unlock()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		select {
		case c := <-s.Calls:
			check(c)
			s.bmu.Lock()
			s.backlog = append(s.backlog, c)
			s.bmu.Unlock()
		case <-deadline.C:
			return
		}
	}
}

func (s *Server) record(c Call) {
	c.At = time.Now()
	s.mu.Lock()
	s.history = append(s.history, c)
	s.mu.Unlock()
	select {
	case s.Calls <- c:
	default:
	}
}

func (s *Server) takeFailure(method string) (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.failures[method]
	if len(q) == 0 {
		return Failure{}, false
	}
	s.failures[method] = q[1:]
	return q[0], true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if t, ok := strings.CutPrefix(h, "Bearer "); ok {
		return t
	}
	return ""
}

// api answers one Web API method.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	call := Call{Method: method, Status: http.StatusOK}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	call.Token = bearerToken(r)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		call.Form, _ = url.ParseQuery(string(body))
		if call.Token == "" {
			call.Token = call.Form.Get("token")
		}
	} else {
		call.Body = body
	}
	answer := func(status int, v map[string]any) {
		call.Status = status
		if ok, _ := v["ok"].(bool); !ok {
			call.Error, _ = v["error"].(string)
		}
		s.record(call)
		writeJSON(w, status, v)
	}
	f, failing := s.takeFailure(method)
	if failing && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
	}
	if failing && !f.slow() {
		switch {
		case f.Status == http.StatusTooManyRequests:
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
			answer(f.Status, map[string]any{"ok": false, "error": "ratelimited"})
		case f.Status >= 500:
			call.Status = f.Status
			s.record(call)
			http.Error(w, "<html>upstream error</html>", f.Status)
		default:
			answer(http.StatusOK, map[string]any{"ok": false, "error": f.Error})
		}
		return
	}
	want := s.opts.BotToken
	if method == "apps.connections.open" {
		want = s.opts.AppToken
	}
	if want != "" && call.Token != want {
		answer(http.StatusOK, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	switch method {
	case "auth.test":
		answer(http.StatusOK, map[string]any{"ok": true, "user_id": "UBOT", "team_id": "T1", "bot_id": "B1"})
	case "chat.postMessage":
		ch := call.Form.Get("channel")
		if ch == "" {
			answer(http.StatusOK, map[string]any{"ok": false, "error": "channel_not_found"})
			return
		}
		thread := call.Form.Get("thread_ts")
		s.mu.Lock()
		if _, ok := s.messages[ch+":"+thread]; thread != "" && !ok {
			s.mu.Unlock()
			answer(http.StatusOK, map[string]any{"ok": false, "error": "thread_not_found"})
			return
		}
		s.nextTS++
		ts := fmt.Sprintf("%d.%06d", s.nextTS/1000000, s.nextTS%1000000)
		s.messages[ch+":"+ts] = &Message{Channel: ch, TS: ts, Text: call.Form.Get("text"), Blocks: call.Form.Get("blocks"),
			ThreadTS: thread}
		s.mu.Unlock()
		msg := map[string]any{"type": "message", "ts": ts, "text": call.Form.Get("text")}
		if thread != "" {
			msg["thread_ts"] = thread
		}
		answer(http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": ts, "message": msg})
	case "chat.update":
		ch, ts := call.Form.Get("channel"), call.Form.Get("ts")
		s.mu.Lock()
		m, ok := s.messages[ch+":"+ts]
		if ok {
			m.Text, m.Blocks = call.Form.Get("text"), call.Form.Get("blocks")
			m.Updates++
		}
		s.mu.Unlock()
		if !ok {
			answer(http.StatusOK, map[string]any{"ok": false, "error": "message_not_found"})
			return
		}
		answer(http.StatusOK, map[string]any{"ok": true, "channel": ch, "ts": ts, "text": call.Form.Get("text")})
	case "chat.postEphemeral":
		if call.Form.Get("user") == "" || call.Form.Get("channel") == "" {
			answer(http.StatusOK, map[string]any{"ok": false, "error": "user_not_in_channel"})
			return
		}
		answer(http.StatusOK, map[string]any{"ok": true, "message_ts": "1700000000.999999"})
	case "views.publish":
		var v struct {
			UserID string          `json:"user_id"`
			View   json.RawMessage `json:"view"`
		}
		if json.Unmarshal(body, &v) != nil || v.UserID == "" {
			answer(http.StatusOK, map[string]any{"ok": false, "error": "invalid_arguments"})
			return
		}
		s.mu.Lock()
		s.views[v.UserID] = v.View
		s.mu.Unlock()
		answer(http.StatusOK, map[string]any{"ok": true, "view": map[string]any{"id": "V1", "type": "home"}})
	case "usergroups.users.list":
		// https://docs.slack.dev/reference/methods/usergroups.users.list
		var id string
		if call.Form != nil {
			id = call.Form.Get("usergroup")
		}
		s.mu.Lock()
		members, ok := s.groups[id]
		members = append([]string{}, members...)
		s.mu.Unlock()
		if !ok {
			answer(http.StatusOK, map[string]any{"ok": false, "error": "no_such_subteam"})
			return
		}
		answer(http.StatusOK, map[string]any{"ok": true, "users": members})
	case "apps.connections.open":
		u := "ws" + strings.TrimPrefix(s.URL, "http") + "/socket"
		answer(http.StatusOK, map[string]any{"ok": true, "url": u})
	default:
		answer(http.StatusOK, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// responseURL answers a post to a response_url (JSON, no token).
func (s *Server) responseURL(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	call := Call{Method: "response_url", Body: body, Status: http.StatusOK}
	f, ok := s.takeFailure("response_url")
	if ok && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
	}
	if ok && f.Status != 0 {
		call.Status = f.Status
		s.record(call)
		http.Error(w, "failed", f.Status)
		return
	}
	s.record(call)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// Sign returns the headers Slack would send with body at time at, signed
// with secret (v0 signature: https://docs.slack.dev/authentication/verifying-requests-from-slack).
func Sign(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:", ts)
	m.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
	return h
}
