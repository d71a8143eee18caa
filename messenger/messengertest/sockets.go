// Package messengertest holds what the messengers' fakes share: the
// websocket connections a fake holds open (Slack's Socket Mode, Discord's
// gateway), each written by one writer at a time, and closed together
// when the fake closes.
package messengertest

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// writeTimeout bounds one write to a connection: a client that stopped
// reading fails the write instead of holding the fake.
const writeTimeout = 5 * time.Second

// Conn is one websocket connection of a fake. gorilla/websocket allows
// one writer at a time; Conn's writes take turns.
type Conn struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

// WriteJSON writes v as one text message.
func (c *Conn) WriteJSON(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteJSON(v)
}

// WriteClose writes a close frame with code and reason.
func (c *Conn) WriteClose(code int, reason string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(writeTimeout))
}

// Ping writes a ping frame.
func (c *Conn) Ping() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
}

// ReadJSON reads the next message into v.
func (c *Conn) ReadJSON(v any) error { return c.ws.ReadJSON(v) }

// ReadMessage reads the next message.
func (c *Conn) ReadMessage() ([]byte, error) {
	_, msg, err := c.ws.ReadMessage()
	return msg, err
}

// ErrClosed is Open's error once the fake is closed.
var ErrClosed = errors.New("messengertest: the fake is closed")

// Sockets is the set of a fake's open connections. The zero value is
// ready; Close it with the fake.
type Sockets struct {
	mu     sync.Mutex
	conns  map[*Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// Open upgrades r to a connection held in the set, until Done. After
// Close it answers 503 and ErrClosed; a failed upgrade has answered r.
func (s *Sockets) Open(w http.ResponseWriter, r *http.Request) (*Conn, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return nil, ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.wg.Done()
		return nil, err
	}
	c := &Conn{ws: ws}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed { // closed during the upgrade
		ws.Close()
		s.wg.Done()
		return nil, ErrClosed
	}
	if s.conns == nil {
		s.conns = map[*Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return c, nil
}

// Done drops c from the set and closes it; once for each Open.
func (s *Sockets) Done(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.ws.Close()
	s.wg.Done()
}

// Go runs f beside an open connection (c, not yet Done); Close waits for
// it too.
func (s *Sockets) Go(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// List is the open connections.
func (s *Sockets) List() []*Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Drop cuts every open connection without a close frame, as a network
// failure does.
func (s *Sockets) Drop() {
	for _, c := range s.List() {
		c.ws.Close()
	}
}

// Close refuses new connections, cuts the open ones and waits until every
// Open is Done and every Go returned.
func (s *Sockets) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.Drop()
	s.wg.Wait()
}
