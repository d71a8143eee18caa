// Package discordtest is a stateful fake of the parts of Discord's API the
// gateway uses, for tests that drive the real discordgo client: the REST
// API under /api/v10 (messages, interaction callbacks and follow-ups,
// command registration, guild members, GET /gateway/bot) and the
// websocket gateway (HELLO, IDENTIFY, READY, heartbeats, INTERACTION_CREATE
// dispatches, RESUME with replay, forced reconnects and invalid sessions).
// It enforces Discord's limits (2,000 characters of content, 5 buttons per
// row, 5 rows, 100-character custom ids, 80-character labels), refuses a
// message without allowed_mentions {"parse": []}, answers 429 with
// retry_after on request, and signs HTTP interactions with its own
// Ed25519 key as Discord does.
package discordtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/messengertest"
)

// Options configure a fake.
type Options struct {
	// Token is the only bot token the fake accepts ("Bot <token>").
	Token string
	// ApplicationID, GuildID, ChannelID are the ids interactions carry.
	ApplicationID, GuildID, ChannelID string
	// HeartbeatInterval is what HELLO asks for. Default 250 ms.
	HeartbeatInterval time.Duration
}

// Call is one request the fake received, REST or websocket.
type Call struct {
	// Method names the route: "messages.create", "messages.edit",
	// "messages.delete", "interaction.callback", "followup.create",
	// "original.edit", "commands.overwrite", "member.get", "gateway.bot",
	// or "ws.identify", "ws.resume" for gateway opcodes.
	Method string
	Path   string
	Body   []byte
	// Status is what the fake answered; Error its message when not 2xx.
	Status int
	Error  string
}

// Payload decodes a call's JSON body.
func (c Call) Payload() map[string]any {
	var v map[string]any
	_ = json.Unmarshal(c.Body, &v)
	return v
}

// Message is a message the fake holds.
type Message struct {
	ID, ChannelID, Content string
	Components             json.RawMessage
	// Edits counts the edits; Reference is the message it replies to.
	Edits     int
	Reference string
	Ephemeral bool
}

// Links lists the URLs of the message's link buttons.
func (m Message) Links() []string {
	var rows []struct {
		Components []struct {
			URL string `json:"url"`
		} `json:"components"`
	}
	_ = json.Unmarshal(m.Components, &rows)
	var out []string
	for _, r := range rows {
		for _, c := range r.Components {
			if c.URL != "" {
				out = append(out, c.URL)
			}
		}
	}
	return out
}

// Buttons lists the custom ids of the message's buttons, row by row.
func (m Message) Buttons() []string {
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	_ = json.Unmarshal(m.Components, &rows)
	var out []string
	for _, r := range rows {
		for _, c := range r.Components {
			if c.CustomID != "" { // link buttons have none
				out = append(out, c.CustomID)
			}
		}
	}
	return out
}

// Labels lists the labels of the message's buttons.
func (m Message) Labels() []string {
	var rows []struct {
		Components []struct {
			Label string `json:"label"`
		} `json:"components"`
	}
	_ = json.Unmarshal(m.Components, &rows)
	var out []string
	for _, r := range rows {
		for _, c := range r.Components {
			out = append(out, c.Label)
		}
	}
	return out
}

// Server is the fake. Create with New; Close when done.
type Server struct {
	// URL is the server's base; APIURL the REST base for discord.api_url.
	URL string

	opts Options
	ts   *httptest.Server
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	history   []Call
	messages  map[string]*Message
	order     []string
	nextID    int64
	limits    map[string][]time.Duration // route → retry_after of the next 429s
	members   map[string][]string        // user id → role ids
	pending   map[string]*pendingInteraction
	commands  json.RawMessage
	sessions  map[string]*session
	connects  int
	identifys int
	resumes   int

	sockets messengertest.Sockets
}

type pendingInteraction struct {
	messageID string
	answered  bool
	original  string // the message id of the response, once made
}

// New starts a fake on 127.0.0.1.
func New(o Options) *Server {
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 250 * time.Millisecond
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	s := &Server{opts: o, pub: pub, priv: priv, changed: make(chan struct{}), messages: map[string]*Message{},
		nextID: 1200000000000000000, limits: map[string][]time.Duration{}, members: map[string][]string{},
		pending: map[string]*pendingInteraction{}, sessions: map[string]*session{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", s.websocket)
	mux.HandleFunc("GET /ws/", s.websocket) // discordgo adds a "/" to the address
	mux.HandleFunc("/api/v10/", s.rest)
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL
	return s
}

// APIURL is the value for discord.api_url.
func (s *Server) APIURL() string { return s.URL + "/api/v10" }

// PublicKey is the application's public key, hex, for discord.public_key.
func (s *Server) PublicKey() string { return hex.EncodeToString(s.pub) }

// Close drops the websocket connections and stops the server.
func (s *Server) Close() {
	s.sockets.Close()
	s.ts.Close()
}

// changedLocked wakes Await; s.mu is held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Await waits until cond, read under the fake's lock, holds; it fails the
// test after timeout. cond is checked again on every change.
func (s *Server) Await(t testing.TB, timeout time.Duration, what string, cond func(*Server) bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, ch := cond(s), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("discordtest: timed out after %v waiting for %s", timeout, what)
		}
	}
}

// The accessors below read state; inside Await's cond they run under the
// lock already (the L-less names), outside use the exported ones.

// CallsLocked returns the calls of method so far (for Await conditions).
func (s *Server) CallsLocked(method string) []Call {
	var out []Call
	for _, c := range s.history {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Calls returns the calls of method so far.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.CallsLocked(method)
}

// History returns every call so far.
func (s *Server) History() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.history...)
}

// MessagesLocked returns the messages in a channel, oldest first.
func (s *Server) MessagesLocked(channel string) []Message {
	var out []Message
	for _, id := range s.order {
		if m := s.messages[id]; m != nil && m.ChannelID == channel {
			out = append(out, *m)
		}
	}
	return out
}

// Messages returns the messages in a channel, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.MessagesLocked(channel)
}

// MessageAt returns the n-th message created (from 1), in any channel,
// ephemeral ones included: a reader can follow the channel as it grows.
func (s *Server) MessageAt(n int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.order) {
		return Message{}, false
	}
	m, ok := s.messages[s.order[n-1]]
	if !ok { // deleted
		return Message{ID: s.order[n-1]}, true
	}
	return *m, true
}

// MessageLocked returns one message.
func (s *Server) MessageLocked(id string) (Message, bool) {
	m, ok := s.messages[id]
	if !ok {
		return Message{}, false
	}
	return *m, true
}

// Message returns one message.
func (s *Server) Message(id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.MessageLocked(id)
}

// Commands returns the body of the last command registration.
func (s *Server) Commands() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commands
}

// Counts are the websocket's connections, IDENTIFYs and RESUMEs so far.
func (s *Server) Counts() (connects, identifys, resumes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects, s.identifys, s.resumes
}

// RateLimit makes the next len(retryAfter) calls of route answer 429 with
// those retry_after values ("messages.create", …).
func (s *Server) RateLimit(route string, retryAfter ...time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits[route] = append(s.limits[route], retryAfter...)
}

// SetMember gives a guild member these roles (GET /guilds/…/members/…).
func (s *Server) SetMember(user string, roles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[user] = append([]string{}, roles...)
}

// pillRE finds what Discord would draw as a mention, role, channel,
// emoji, timestamp or command pill, or the @everyone/@here highlight.
var pillRE = regexp.MustCompile(`<(@[!&]?|#|a?:[A-Za-z0-9_]+:|t:|/[^:>]+:)\d+[^>]*>|@(everyone|here)\b`)

// Pills returns what Discord would draw as a mention or pill in content:
// code spans and blocks and backslash-escaped characters draw none.
func Pills(content string) []string {
	var plain strings.Builder
	for i := 0; i < len(content); i++ {
		switch {
		case strings.HasPrefix(content[i:], "```"):
			end := strings.Index(content[i+3:], "```")
			if end < 0 {
				plain.WriteString(content[i:])
				i = len(content)
				continue
			}
			i += 3 + end + 2
		case content[i] == '`':
			end := strings.IndexByte(content[i+1:], '`')
			if end < 0 {
				plain.WriteByte('`')
				continue
			}
			i += 1 + end
		case content[i] == '\\' && i+1 < len(content):
			plain.WriteByte(' ')
			i++
		default:
			plain.WriteByte(content[i])
		}
	}
	return pillRE.FindAllString(plain.String(), -1)
}
