package discordtest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Interaction is what a test taps or types: the fake turns it into
// Discord's INTERACTION_CREATE payload.
type Interaction struct {
	// UserID taps; Roles are their roles in the guild. Username is
	// theirs ("u"+UserID when empty).
	UserID, Username string
	Roles            []string
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
	name := in.Username
	if name == "" {
		name = "u" + in.UserID
	}
	user := map[string]any{"id": in.UserID, "username": name, "discriminator": "0"}
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
