package mcpserver

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// sessionHeader is the streamable HTTP transport's session id header.
const sessionHeader = "Mcp-Session-Id"

// sessionCap counts each agent's open MCP sessions, as the SDK keeps them:
// a session lives while a request of it is running and for idle after its
// last one, or until the client deletes it.
type sessionCap struct {
	max  int
	idle time.Duration
	now  func() time.Time

	mu       sync.Mutex
	sessions map[string]*session // by session id
}

type session struct {
	agent   string
	running int
	last    time.Time
}

func newSessionCap(max int, idle time.Duration, now func() time.Time) *sessionCap {
	return &sessionCap{max: max, idle: idle, now: now, sessions: map[string]*session{}}
}

// wrap refuses an agent's new session (a POST without a session id: an
// initialize) while it holds max, with 429 too_many_sessions, and keeps
// the count as sessions are used, deleted and idle out. It runs after the
// bearer token was checked: the agent is the token's.
func (c *sessionCap) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := auth.TokenInfoFromContext(r.Context())
		if info == nil {
			h.ServeHTTP(w, r)
			return
		}
		agent, id := info.UserID, r.Header.Get(sessionHeader)
		if id == "" {
			if r.Method == http.MethodPost && !c.room(agent) {
				w.Header().Set("Retry-After", "60")
				writeError(w, http.StatusTooManyRequests, "too_many_sessions",
					"this agent holds the most MCP sessions it may; close one (DELETE /mcp) or let one idle out")
				return
			}
			// Counted as the answer's header goes out: the client may ask
			// again before the handler returns.
			h.ServeHTTP(&onHeader{ResponseWriter: w, f: func() {
				if id := w.Header().Get(sessionHeader); id != "" {
					c.used(id, agent, 0)
				}
			}}, r)
			return
		}
		c.used(id, agent, +1)
		defer c.used(id, agent, -1)
		h.ServeHTTP(w, r)
		if r.Method == http.MethodDelete {
			c.mu.Lock()
			delete(c.sessions, id)
			c.mu.Unlock()
		}
	})
}

// room says whether agent may open one more session, forgetting the
// sessions that have idled out.
func (c *sessionCap) room(agent string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now, n := c.now(), 0
	for id, s := range c.sessions {
		switch {
		case s.running == 0 && now.Sub(s.last) >= c.idle:
			delete(c.sessions, id)
		case s.agent == agent:
			n++
		}
	}
	return n < c.max
}

// used records a request on session id: starting (+1), ending (-1), or
// the session just made (0). Only sessions seen made are kept, and only
// their own agent's requests count (the SDK refuses another's token).
func (c *sessionCap) used(id, agent string, delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[id]
	if s == nil {
		if delta != 0 {
			return // not one we saw made (or gone): the SDK answers it 404
		}
		s = &session{agent: agent}
		c.sessions[id] = s
	}
	if s.agent != agent {
		return
	}
	s.running = max(s.running+delta, 0)
	s.last = c.now()
}

// writeError answers the gateway API's error shape:
// {"error":{"code":"…","message":"…"}}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// onHeader calls f once, just before the response's header is written.
type onHeader struct {
	http.ResponseWriter
	f    func()
	done bool
}

func (o *onHeader) header() {
	if !o.done {
		o.done = true
		o.f()
	}
}

func (o *onHeader) WriteHeader(code int) { o.header(); o.ResponseWriter.WriteHeader(code) }

func (o *onHeader) Write(p []byte) (int, error) { o.header(); return o.ResponseWriter.Write(p) }

func (o *onHeader) Flush() {
	o.header()
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (o *onHeader) Unwrap() http.ResponseWriter { return o.ResponseWriter }
