package slacktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// socket is the WebSocket endpoint apps.connections.open points to: it says
// hello, pings, and records every acknowledgement the client writes back.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	c, err := s.sockets.Open(w, r)
	if err != nil {
		return
	}
	s.record(Call{Method: "socket.connect", Status: http.StatusSwitchingProtocols})
	_ = c.WriteJSON(map[string]any{"type": "hello", "num_connections": 1,
		"debug_info": map[string]any{"host": "slacktest"}, "connection_info": map[string]any{"app_id": "A1"}})
	done := make(chan struct{})
	s.sockets.Go(func() { // pinger: slack-go drops a connection that Slack stops pinging
		t := time.NewTicker(s.opts.PingInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if c.Ping() != nil {
					return
				}
			}
		}
	})
	s.sockets.Go(func() { // reader: acknowledgements
		defer s.sockets.Done(c)
		defer close(done)
		for {
			msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			s.record(Call{Method: "socket.ack", Body: msg, Status: http.StatusOK})
		}
	})
}

// Sockets counts the open Socket Mode connections.
func (s *Server) Sockets() int { return len(s.sockets.List()) }

func (s *Server) broadcast(v any) error {
	conns := s.sockets.List()
	if len(conns) == 0 {
		return errors.New("slacktest: no Socket Mode connection")
	}
	var firstErr error
	for _, c := range conns {
		if err := c.WriteJSON(v); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// SendEnvelope sends a Socket Mode envelope ("interactive", "slash_commands",
// "events_api") with payload to every open connection and returns its
// envelope_id, which the client must acknowledge.
func (s *Server) SendEnvelope(typ string, payload json.RawMessage) (string, error) {
	s.mu.Lock()
	s.envSeq++
	id := fmt.Sprintf("env-%d", s.envSeq)
	s.mu.Unlock()
	return id, s.broadcast(map[string]any{"envelope_id": id, "type": typ, "payload": payload,
		"accepts_response_payload": typ != "events_api"})
}

// Disconnect asks every client to reconnect, as Slack does before it
// rotates a connection.
func (s *Server) Disconnect() error {
	return s.broadcast(map[string]any{"type": "disconnect", "reason": "refresh_requested"})
}

// DropSockets closes every Socket Mode connection abruptly (a network
// failure, not a polite disconnect).
func (s *Server) DropSockets() { s.sockets.Drop() }

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s%d", prefix, seq.Add(1)) }

// BlockAction is one click on a button, as Slack describes it in a
// block_actions payload (https://docs.slack.dev/reference/interaction-payloads/block_actions-payload).
// Empty TriggerID and ActionTS get fresh values, so two clicks differ.
type BlockAction struct {
	UserID, UserName       string
	ChannelID, MessageTS   string // a click on a message; empty for the Home tab
	ViewID                 string // a click on the Home tab
	BlockID, ActionID      string
	Value                  string
	ResponseURL, TriggerID string
	ActionTS               string
	TeamID                 string // "" is T1, the fake's auth.test team
	// Selected, when set, makes the action a static_select whose chosen
	// option has this value (Value is then unused).
	Selected string
	// State is the message's input state Slack sends with the action:
	// block id → action id → the selected option's value.
	State map[string]map[string]string
}

// JSON is the payload.
func (a BlockAction) JSON() json.RawMessage {
	if a.TriggerID == "" {
		a.TriggerID = unique("trigger.")
	}
	if a.ActionTS == "" {
		a.ActionTS = fmt.Sprintf("%d.%06d", time.Now().Unix(), seq.Add(1)%1000000)
	}
	if a.TeamID == "" {
		a.TeamID = "T1"
	}
	p := map[string]any{
		"type": "block_actions", "api_app_id": "A1", "token": "legacy", "trigger_id": a.TriggerID,
		"team": map[string]any{"id": a.TeamID, "domain": "example"},
		"user": map[string]any{"id": a.UserID, "username": a.UserName, "name": a.UserName, "team_id": a.TeamID},
		"actions": []map[string]any{{"type": "button", "block_id": a.BlockID, "action_id": a.ActionID,
			"value": a.Value, "action_ts": a.ActionTS, "text": map[string]any{"type": "plain_text", "text": "x"}}},
	}
	if a.Selected != "" {
		p["actions"] = []map[string]any{{"type": "static_select", "block_id": a.BlockID, "action_id": a.ActionID,
			"action_ts": a.ActionTS, "selected_option": map[string]any{"value": a.Selected,
				"text": map[string]any{"type": "plain_text", "text": "x"}}}}
	}
	if a.State != nil {
		values := map[string]any{}
		for block, acts := range a.State {
			m := map[string]any{}
			for act, v := range acts {
				m[act] = map[string]any{"type": "static_select", "selected_option": map[string]any{"value": v,
					"text": map[string]any{"type": "plain_text", "text": "x"}}}
			}
			values[block] = m
		}
		p["state"] = map[string]any{"values": values}
	}
	if a.ViewID != "" {
		p["container"] = map[string]any{"type": "view", "view_id": a.ViewID}
		p["view"] = map[string]any{"id": a.ViewID, "type": "home"}
	} else {
		p["container"] = map[string]any{"type": "message", "message_ts": a.MessageTS, "channel_id": a.ChannelID,
			"is_ephemeral": false}
		p["channel"] = map[string]any{"id": a.ChannelID, "name": "approvals"}
		p["message"] = map[string]any{"type": "message", "ts": a.MessageTS, "text": "card"}
		p["response_url"] = a.ResponseURL
	}
	b, _ := json.Marshal(p)
	return b
}

// InteractionBody is the body Slack POSTs to the interactivity URL.
func InteractionBody(payload json.RawMessage) []byte {
	return []byte("payload=" + url.QueryEscape(string(payload)))
}

// Command is one slash command invocation.
type Command struct {
	UserID, UserName, ChannelID string
	Command, Text               string
	ResponseURL, TriggerID      string
	TeamID                      string // "" is T1, the fake's auth.test team
}

// Form is the body Slack POSTs to the slash command URL.
func (c Command) Form() []byte {
	return []byte(c.values().Encode())
}

func (c Command) values() url.Values {
	if c.Command == "" {
		c.Command = "/approvals"
	}
	if c.TriggerID == "" {
		c.TriggerID = unique("trigger.")
	}
	if c.TeamID == "" {
		c.TeamID = "T1"
	}
	return url.Values{"token": {"legacy"}, "team_id": {c.TeamID}, "team_domain": {"example"},
		"channel_id": {c.ChannelID}, "channel_name": {"approvals"}, "user_id": {c.UserID},
		"user_name": {c.UserName}, "command": {c.Command}, "text": {c.Text}, "response_url": {c.ResponseURL},
		"trigger_id": {c.TriggerID}, "api_app_id": {"A1"}}
}

// JSON is the command as a Socket Mode slash_commands payload.
func (c Command) JSON() json.RawMessage {
	m := map[string]string{}
	for k, v := range c.values() {
		m[k] = v[0]
	}
	b, _ := json.Marshal(m)
	return b
}

// AppHomeOpened is an Events API event_callback for a user opening the
// app's Home tab; EventID empty gets a fresh one.
func AppHomeOpened(userID, eventID string) json.RawMessage {
	if eventID == "" {
		eventID = unique("Ev")
	}
	b, _ := json.Marshal(map[string]any{
		"token": "legacy", "team_id": "T1", "api_app_id": "A1", "type": "event_callback", "event_id": eventID,
		"event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_home_opened", "user": userID, "channel": "D1", "tab": "home",
			"event_ts": fmt.Sprintf("%d.000100", time.Now().Unix())},
	})
	return b
}
