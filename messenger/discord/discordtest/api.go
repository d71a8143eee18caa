package discordtest

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

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
