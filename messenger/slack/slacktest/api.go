// The Web API methods the fake answers, its response_url and the request
// signing a test uses to post as Slack does.

package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

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
