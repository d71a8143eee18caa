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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/messengertest"
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
	envSeq   int

	bmu     sync.Mutex
	backlog []Call // read from Calls by Wait but not yet taken

	sockets messengertest.Sockets
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
	s.sockets.Close()
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

// Messages returns the messages posted in channel (every channel when
// channel is ""), not those in threads, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if (channel == "" || m.Channel == channel) && m.ThreadTS == "" {
			out = append(out, *m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out
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
