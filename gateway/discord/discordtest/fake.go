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
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
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
	conns     map[*wsConn]struct{}
	connects  int
	identifys int
	resumes   int
	closed    bool
	wg        sync.WaitGroup
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
		pending: map[string]*pendingInteraction{}, sessions: map[string]*session{}, conns: map[*wsConn]struct{}{}}
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
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.conn.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
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

// apiError is Discord's error shape.
func apiError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var (
	reMessages = regexp.MustCompile(`^/channels/(\d+)/messages$`)
	reMessage  = regexp.MustCompile(`^/channels/(\d+)/messages/(\d+)$`)
	reCallback = regexp.MustCompile(`^/interactions/(\d+)/([^/]+)/callback$`)
	reFollowup = regexp.MustCompile(`^/webhooks/(\d+)/([^/]+)$`)
	reOriginal = regexp.MustCompile(`^/webhooks/(\d+)/([^/]+)/messages/@original$`)
	reCommands = regexp.MustCompile(`^/applications/(\d+)/guilds/(\d+)/commands$`)
	reMember   = regexp.MustCompile(`^/guilds/(\d+)/members/(\d+)$`)
)

// route names a request as Call.Method does.
func route(method, path string) string {
	switch {
	case method == "GET" && path == "/gateway/bot":
		return "gateway.bot"
	case method == "POST" && reMessages.MatchString(path):
		return "messages.create"
	case method == "PATCH" && reMessage.MatchString(path):
		return "messages.edit"
	case method == "DELETE" && reMessage.MatchString(path):
		return "messages.delete"
	case method == "POST" && reCallback.MatchString(path):
		return "interaction.callback"
	case method == "POST" && reFollowup.MatchString(path):
		return "followup.create"
	case method == "PATCH" && reOriginal.MatchString(path):
		return "original.edit"
	case method == "PUT" && reCommands.MatchString(path):
		return "commands.overwrite"
	case method == "GET" && reMember.MatchString(path):
		return "member.get"
	}
	return ""
}

// rest serves the REST API.
func (s *Server) rest(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v10")
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	name := route(r.Method, path)
	call := Call{Method: name, Path: path, Body: body, Status: http.StatusOK}
	rec := func(status int, msg string) {
		call.Status, call.Error = status, msg
		s.history = append(s.history, call)
		s.changedLocked()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if name == "" {
		rec(http.StatusNotFound, "404: Not Found")
		apiError(w, http.StatusNotFound, 0, "404: Not Found")
		return
	}
	// Interaction callbacks and follow-ups are authorised by their token,
	// everything else by the bot token.
	if !strings.HasPrefix(name, "interaction.") && name != "followup.create" && name != "original.edit" &&
		r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		rec(http.StatusUnauthorized, "401: Unauthorized")
		apiError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return
	}
	w.Header().Set("X-RateLimit-Bucket", name)
	if q := s.limits[name]; len(q) > 0 {
		wait := q[0]
		s.limits[name] = q[1:]
		rec(http.StatusTooManyRequests, "You are being rate limited.")
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		w.Header().Set("X-RateLimit-Scope", "user")
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"message": "You are being rate limited.",
			"retry_after": wait.Seconds(), "global": false})
		return
	}
	var status int
	var out any
	var errMsg string
	switch name {
	case "gateway.bot":
		status, out = 200, map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws", "shards": 1,
			"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}}
	case "messages.create":
		m := reMessages.FindStringSubmatch(path)
		status, out, errMsg = s.create(m[1], body, false)
	case "messages.edit":
		m := reMessage.FindStringSubmatch(path)
		status, out, errMsg = s.edit(m[1], m[2], body)
	case "messages.delete":
		m := reMessage.FindStringSubmatch(path)
		if _, ok := s.messages[m[2]]; !ok {
			status, errMsg = 404, "Unknown Message"
		} else {
			delete(s.messages, m[2])
			status = 204
		}
	case "interaction.callback":
		m := reCallback.FindStringSubmatch(path)
		status, out, errMsg = s.callback(m[1], m[2], body)
	case "followup.create":
		m := reFollowup.FindStringSubmatch(path)
		status, out, errMsg = s.followup(m[2], body)
	case "original.edit":
		m := reOriginal.FindStringSubmatch(path)
		status, out, errMsg = s.editOriginal(m[2], body)
	case "commands.overwrite":
		var cmds []map[string]any
		if err := json.Unmarshal(body, &cmds); err != nil {
			status, errMsg = 400, "Invalid Form Body"
		} else {
			s.commands = append(json.RawMessage(nil), body...)
			for i, c := range cmds {
				c["id"] = strconv.FormatInt(s.nextID+int64(i), 10)
			}
			status, out = 200, cmds
		}
	case "member.get":
		m := reMember.FindStringSubmatch(path)
		roles, ok := s.members[m[2]]
		if !ok || m[1] != s.opts.GuildID {
			status, errMsg = 404, "Unknown Member"
		} else {
			status, out = 200, map[string]any{"user": map[string]any{"id": m[2], "username": "u" + m[2]}, "roles": roles}
		}
	}
	rec(status, errMsg)
	switch {
	case errMsg != "":
		code := 50035
		if status == 404 {
			code = 10008
		}
		apiError(w, status, code, errMsg)
	case status == 204:
		w.WriteHeader(204)
	default:
		writeJSON(w, status, out)
	}
}

// messageBody is what the fake reads of a message create or edit.
type messageBody struct {
	Content         *string          `json:"content"`
	Components      *json.RawMessage `json:"components"`
	AllowedMentions *struct {
		Parse *[]string `json:"parse"`
	} `json:"allowed_mentions"`
	Flags            int `json:"flags"`
	MessageReference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
}

// check applies Discord's limits and the gateway's own rule that every
// message carries allowed_mentions {"parse": []}.
func (b messageBody) check() string {
	if b.AllowedMentions == nil || b.AllowedMentions.Parse == nil || len(*b.AllowedMentions.Parse) != 0 {
		return `allowed_mentions must be {"parse": []} (the gateway's rule)`
	}
	if b.Content != nil && len(utf16.Encode([]rune(*b.Content))) > 2000 {
		return "content: Must be 2000 or fewer in length."
	}
	if b.Components != nil {
		return checkComponents(*b.Components)
	}
	return ""
}

func checkComponents(raw json.RawMessage) string {
	var rows []struct {
		Type       int `json:"type"`
		Components []struct {
			Type     int    `json:"type"`
			CustomID string `json:"custom_id"`
			Label    string `json:"label"`
			Style    int    `json:"style"`
			URL      string `json:"url"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return "components: invalid"
	}
	if len(rows) > 5 {
		return "components: Must be 5 or fewer in length."
	}
	for _, r := range rows {
		if r.Type != 1 {
			return "components: top level must be action rows"
		}
		if len(r.Components) == 0 || len(r.Components) > 5 {
			return "components: an action row holds 1 to 5 buttons"
		}
		for _, c := range r.Components {
			switch {
			case c.Type != 2:
				return "components: only buttons are expected"
			case c.Style == 5: // a link button: a URL, no custom_id
				if c.CustomID != "" || !strings.HasPrefix(c.URL, "https://") && !strings.HasPrefix(c.URL, "http://") {
					return "url: a link button takes a url and no custom_id"
				}
			case c.CustomID == "" || len([]rune(c.CustomID)) > 100:
				return "custom_id: Must be between 1 and 100 in length."
			case len([]rune(c.Label)) > 80:
				return "label: Must be 80 or fewer in length."
			case c.Style < 1 || c.Style > 4:
				return "style: invalid for a custom_id button"
			}
		}
	}
	return ""
}

func (s *Server) newID() string {
	s.nextID++
	return strconv.FormatInt(s.nextID, 10)
}

func (s *Server) messageJSON(m *Message) map[string]any {
	out := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0,
		"author":    map[string]any{"id": s.opts.ApplicationID, "username": "gateway", "bot": true},
		"timestamp": "2026-11-26T00:00:00+00:00"}
	if len(m.Components) > 0 {
		out["components"] = m.Components
	}
	return out
}

func (s *Server) create(channel string, body []byte, ephemeral bool) (int, any, string) {
	var b messageBody
	if err := json.Unmarshal(body, &b); err != nil {
		return 400, nil, "Invalid Form Body"
	}
	if msg := b.check(); msg != "" {
		return 400, nil, msg
	}
	if channel != s.opts.ChannelID && !ephemeral {
		return 404, nil, "Unknown Channel"
	}
	m := &Message{ID: s.newID(), ChannelID: channel, Ephemeral: ephemeral}
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Components != nil {
		m.Components = append(json.RawMessage(nil), *b.Components...)
	}
	if b.MessageReference != nil {
		m.Reference = b.MessageReference.MessageID
	}
	if m.Content == "" && len(m.Components) == 0 {
		return 400, nil, "Cannot send an empty message"
	}
	s.messages[m.ID] = m
	s.order = append(s.order, m.ID)
	return 200, s.messageJSON(m), ""
}

func (s *Server) edit(channel, id string, body []byte) (int, any, string) {
	m, ok := s.messages[id]
	if !ok || m.ChannelID != channel {
		return 404, nil, "Unknown Message"
	}
	var b messageBody
	if err := json.Unmarshal(body, &b); err != nil {
		return 400, nil, "Invalid Form Body"
	}
	if msg := b.check(); msg != "" {
		return 400, nil, msg
	}
	if b.Content != nil {
		m.Content = *b.Content
	}
	if b.Components != nil {
		m.Components = append(json.RawMessage(nil), *b.Components...)
	}
	m.Edits++
	return 200, s.messageJSON(m), ""
}

// The interaction callback types the gateway uses.
const (
	respondMessage         = 4 // CHANNEL_MESSAGE_WITH_SOURCE
	respondDeferredMessage = 5 // DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE
	respondDeferredUpdate  = 6 // DEFERRED_UPDATE_MESSAGE
	respondUpdate          = 7 // UPDATE_MESSAGE
	respondPong            = 1
)

// callback is POST /interactions/{id}/{token}/callback.
func (s *Server) callback(id, token string, body []byte) (int, any, string) {
	p, ok := s.pending[token]
	if !ok {
		return 404, nil, "Unknown interaction"
	}
	if p.answered {
		return 400, nil, "Interaction has already been acknowledged."
	}
	var resp struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return 400, nil, "Invalid Form Body"
	}
	if st, msg := s.answer(p, resp.Type, resp.Data); msg != "" {
		return st, nil, msg
	}
	return 204, nil, ""
}

// answer applies an interaction response (from a callback or, in HTTP
// mode, the endpoint's own answer, see Server.Answered).
func (s *Server) answer(p *pendingInteraction, typ int, data json.RawMessage) (int, string) {
	var b messageBody
	if typ != respondPong {
		if len(data) == 0 {
			return 400, "data: the gateway sends allowed_mentions on every response"
		}
		if err := json.Unmarshal(data, &b); err != nil {
			return 400, "Invalid Form Body"
		}
		if msg := b.check(); msg != "" {
			return 400, msg
		}
	}
	switch typ {
	case respondPong, respondDeferredUpdate:
	case respondDeferredMessage:
		m := &Message{ID: s.newID(), ChannelID: s.opts.ChannelID, Ephemeral: b.Flags&64 != 0, Content: "…"}
		s.messages[m.ID] = m
		s.order = append(s.order, m.ID)
		p.original = m.ID
	case respondMessage:
		st, out, msg := s.create(s.opts.ChannelID, data, b.Flags&64 != 0)
		if msg != "" {
			return st, msg
		}
		p.original = out.(map[string]any)["id"].(string)
	case respondUpdate:
		if st, _, msg := s.edit(s.opts.ChannelID, p.messageID, data); msg != "" {
			return st, msg
		}
	default:
		return 400, "type: unknown interaction callback type"
	}
	p.answered = true
	return 200, ""
}

// answeredLocked waits (releasing the lock) until the interaction of
// token is answered, as Discord takes a follow-up only after the
// interaction's response, which in HTTP mode the fake applies once the
// endpoint's answer is read.
func (s *Server) answeredLocked(token string) (*pendingInteraction, bool) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, ok := s.pending[token]
		if !ok || p.answered || time.Now().After(deadline) {
			return p, ok && p.answered
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		}
		s.mu.Lock()
	}
}

func (s *Server) followup(token string, body []byte) (int, any, string) {
	_, ok := s.answeredLocked(token)
	if !ok {
		return 404, nil, "Unknown Webhook"
	}
	var b messageBody
	_ = json.Unmarshal(body, &b)
	return s.create(s.opts.ChannelID, body, b.Flags&64 != 0)
}

func (s *Server) editOriginal(token string, body []byte) (int, any, string) {
	p, ok := s.answeredLocked(token)
	if !ok || p.original == "" {
		return 404, nil, "Unknown Message"
	}
	return s.edit(s.opts.ChannelID, p.original, body)
}

// Interaction is what a test taps or types: the fake turns it into
// Discord's INTERACTION_CREATE payload.
type Interaction struct {
	// UserID taps; Roles are their roles in the guild.
	UserID string
	Roles  []string
	// MessageID is the message the button is on (components).
	MessageID string
	// CustomID is the tapped button's (components).
	CustomID string
	// Command and Options are a slash command (/approvals Command …).
	Command string
	Options map[string]any
	// GuildID and ChannelID default to the fake's; DM drops the member.
	GuildID, ChannelID string
	DM                 bool
}

// Payload builds the interaction's JSON as Discord sends it, registers it
// so its callback is accepted, and returns it with its id and token.
func (s *Server) Payload(in Interaction) (body []byte, id, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, token = s.newID(), "tok-"+s.newID()
	guild, channel := in.GuildID, in.ChannelID
	if guild == "" {
		guild = s.opts.GuildID
	}
	if channel == "" {
		channel = s.opts.ChannelID
	}
	user := map[string]any{"id": in.UserID, "username": "u" + in.UserID, "discriminator": "0"}
	p := map[string]any{"id": id, "application_id": s.opts.ApplicationID, "token": token, "version": 1,
		"channel_id": channel, "locale": "en-US", "app_permissions": "0"}
	if in.DM {
		p["user"] = user
	} else {
		roles := in.Roles
		if roles == nil {
			roles = []string{}
		}
		p["guild_id"] = guild
		p["member"] = map[string]any{"user": user, "roles": roles, "permissions": "0", "joined_at": "2026-01-01T00:00:00+00:00"}
	}
	if in.Command != "" {
		p["type"] = 2
		var opts []map[string]any
		for k, v := range in.Options {
			opts = append(opts, map[string]any{"name": k, "type": 4, "value": v})
		}
		sub := map[string]any{"name": in.Command, "type": 1}
		if len(opts) > 0 {
			sub["options"] = opts
		}
		p["data"] = map[string]any{"id": "1", "name": "approvals", "type": 1, "options": []any{sub}}
	} else {
		p["type"] = 3
		p["data"] = map[string]any{"custom_id": in.CustomID, "component_type": 2}
		if m, ok := s.messages[in.MessageID]; ok {
			p["message"] = s.messageJSON(m)
		} else {
			p["message"] = map[string]any{"id": in.MessageID, "channel_id": channel, "content": ""}
		}
	}
	s.pending[token] = &pendingInteraction{messageID: in.MessageID}
	body, _ = json.Marshal(p)
	return body, id, token
}

// Sign signs body at ts as Discord signs an HTTP interaction: Ed25519 over
// the timestamp followed by the body, hex.
func (s *Server) Sign(ts string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(s.priv, append([]byte(ts), body...)))
}

// PostInteraction sends in to an interactions endpoint as Discord does
// (signed now) and applies the endpoint's answer as Discord would. It
// returns the HTTP status and the answer's body.
func (s *Server) PostInteraction(client *http.Client, endpoint string, in Interaction) (int, []byte, error) {
	body, _, token := s.Payload(in)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	return s.PostSigned(client, endpoint, body, token, ts, s.Sign(ts, body))
}

// PostSigned posts a body with the given timestamp and signature headers
// (a test forges or ages them) and applies a 200 answer to the
// interaction of token.
func (s *Server) PostSigned(client *http.Client, endpoint string, body []byte, token, ts, sig string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if ts != "" {
		req.Header.Set("X-Signature-Timestamp", ts)
	}
	if sig != "" {
		req.Header.Set("X-Signature-Ed25519", sig)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK && token != "" {
		var r struct {
			Type int             `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			return resp.StatusCode, out, fmt.Errorf("the endpoint's answer is not an interaction response: %v", err)
		}
		s.mu.Lock()
		call := Call{Method: "interaction.callback", Path: "(http answer)", Body: out, Status: 200}
		if p, ok := s.pending[token]; ok && !p.answered {
			if st, msg := s.answer(p, r.Type, r.Data); msg != "" {
				call.Status, call.Error = st, msg
			}
		}
		s.history = append(s.history, call)
		s.changedLocked()
		s.mu.Unlock()
	}
	return resp.StatusCode, out, nil
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
