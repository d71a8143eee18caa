package discordtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/metnos/gateway/messenger/messengertest"
)

// The gateway opcodes (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-opcodes).
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// session is one gateway session: its dispatches, numbered, kept so that
// a RESUME gets what it missed.
type session struct {
	id     string
	seq    int64
	events []frame
	conn   *wsConn
}

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

// wsConn is one gateway connection and the session it carries.
type wsConn struct {
	*messengertest.Conn
	sess *session
}

func (c *wsConn) send(f frame) error { return c.WriteJSON(f) }

func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// websocket is GET /ws: one gateway connection.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("v") == "" || r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "want ?v=…&encoding=json", http.StatusBadRequest)
		return
	}
	mc, err := s.sockets.Open(w, r)
	if err != nil {
		return
	}
	c := &wsConn{Conn: mc}
	s.mu.Lock()
	s.connects++
	s.changedLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		s.changedLocked()
		s.mu.Unlock()
		s.sockets.Done(mc)
	}()
	if c.send(frame{Op: opHello, D: rawJSON(map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()})}) != nil {
		return
	}
	for {
		var f frame
		if err := c.ReadJSON(&f); err != nil {
			return
		}
		switch f.Op {
		case opHeartbeat:
			if c.send(frame{Op: opHeartbeatACK}) != nil {
				return
			}
		case opIdentify:
			var id struct {
				Token   string `json:"token"`
				Intents int    `json:"intents"`
			}
			_ = json.Unmarshal(f.D, &id)
			if strings.TrimPrefix(id.Token, "Bot ") != s.opts.Token {
				s.record("ws.identify", f.D, 4004, "Authentication failed.")
				_ = c.WriteClose(4004, "Authentication failed.")
				return
			}
			s.record("ws.identify", f.D, 200, "")
			s.mu.Lock()
			s.identifys++
			sess := &session{id: "sess-" + s.newID()}
			s.sessions[sess.id] = sess
			s.attachLocked(c, sess)
			ready := s.dispatchLocked(sess, "READY", map[string]any{
				"v": 10, "session_id": sess.id, "resume_gateway_url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws",
				"user":        map[string]any{"id": s.opts.ApplicationID, "username": "gateway", "bot": true},
				"application": map[string]any{"id": s.opts.ApplicationID, "flags": 0},
				"guilds":      []any{map[string]any{"id": s.opts.GuildID, "unavailable": true}},
			})
			s.mu.Unlock()
			if ready != nil {
				return
			}
		case opResume:
			var rs struct {
				Token     string `json:"token"`
				SessionID string `json:"session_id"`
				Seq       int64  `json:"seq"`
			}
			_ = json.Unmarshal(f.D, &rs)
			s.record("ws.resume", f.D, 200, "")
			s.mu.Lock()
			sess, ok := s.sessions[rs.SessionID]
			if !ok || strings.TrimPrefix(rs.Token, "Bot ") != s.opts.Token {
				s.mu.Unlock()
				if c.send(frame{Op: opInvalidSession, D: rawJSON(false)}) != nil {
					return
				}
				continue
			}
			s.resumes++
			s.attachLocked(c, sess)
			var missed []frame
			for _, e := range sess.events {
				if *e.S > rs.Seq {
					missed = append(missed, e)
				}
			}
			s.mu.Unlock()
			for _, e := range missed {
				if c.send(e) != nil {
					return
				}
			}
			s.mu.Lock()
			err := s.dispatchLocked(sess, "RESUMED", map[string]any{})
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

func (s *Server) record(method string, body []byte, status int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.history = append(s.history, Call{Method: method, Body: append([]byte(nil), body...), Status: status, Error: msg})
	s.changedLocked()
}

// attachLocked makes c the connection of sess.
func (s *Server) attachLocked(c *wsConn, sess *session) {
	c.sess = sess
	sess.conn = c
	s.changedLocked()
}

// dispatchLocked numbers an event in sess, keeps it for a RESUME and sends
// it when sess has a connection. The send happens under s.mu so events go
// out in order.
func (s *Server) dispatchLocked(sess *session, typ string, d any) error {
	sess.seq++
	seq, t := sess.seq, typ
	f := frame{Op: opDispatch, D: rawJSON(d), S: &seq, T: &t}
	if typ != "RESUMED" {
		sess.events = append(sess.events, f)
	}
	s.changedLocked()
	if sess.conn == nil {
		return nil
	}
	return sess.conn.send(f)
}

// current is the session that identified last.
func (s *Server) currentLocked() *session {
	var cur *session
	for _, sess := range s.sessions {
		if cur == nil || sess.id > cur.id {
			cur = sess
		}
	}
	return cur
}

// Tap sends in over the websocket as INTERACTION_CREATE to the current
// session (kept for its RESUME while it has no connection) and returns
// the interaction's id and token.
func (s *Server) Tap(t testing.TB, in Interaction) (id, token string) {
	t.Helper()
	id, token, err := s.Dispatch(in)
	if err != nil {
		t.Fatal(err)
	}
	return id, token
}

// Dispatch is Tap for callers without a testing.TB.
func (s *Server) Dispatch(in Interaction) (id, token string, err error) {
	body, id, token := s.Payload(in)
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.currentLocked()
	if sess == nil {
		return "", "", errors.New("discordtest: no gateway session to dispatch to")
	}
	_ = s.dispatchLocked(sess, "INTERACTION_CREATE", json.RawMessage(body))
	return id, token, nil
}

// Drop cuts every gateway connection without a close frame, as a network
// failure does; sessions stay resumable.
func (s *Server) Drop() {
	s.sockets.Drop()
}

// Reconnect sends op 7 RECONNECT on every connection.
func (s *Server) Reconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sockets.List() {
		_ = c.WriteJSON(frame{Op: opReconnect})
	}
}

// InvalidateSession sends op 9 (not resumable) on every connection and
// forgets the sessions: the client must IDENTIFY again.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sockets.List() {
		_ = c.WriteJSON(frame{Op: opInvalidSession, D: rawJSON(false)})
	}
	s.sessions = map[string]*session{}
}

// ConnectedLocked reports whether a session has a live connection (for Await).
func (s *Server) ConnectedLocked() bool {
	sess := s.currentLocked()
	return sess != nil && sess.conn != nil
}
