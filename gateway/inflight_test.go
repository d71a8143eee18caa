package gateway_test

import (
	"bytes"
	"net"
	"sync"
)

// readsListener is a listener that tells when the server has read a
// request holding a marker (its path and query): from then on the
// request is the server's to answer, whatever happens next. A test
// waits for that instead of sleeping, say for a long-poll to be in
// flight before the decision that should wake it.
type readsListener struct {
	net.Listener
	mu    sync.Mutex
	watch map[string]chan struct{}
}

func watchReads(ln net.Listener) *readsListener {
	return &readsListener{Listener: ln, watch: map[string]chan struct{}{}}
}

// reading is closed once the server has read marker, looked for from now
// on (at most maxMarker bytes).
func (l *readsListener) reading(marker string) <-chan struct{} {
	if len(marker) > maxMarker {
		panic("readsListener: marker longer than maxMarker")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	l.watch[marker] = ch
	return ch
}

// read looks for the markers in what a connection read, tail and all.
func (l *readsListener) read(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for m, ch := range l.watch {
		if bytes.Contains(b, []byte(m)) {
			close(ch)
			delete(l.watch, m)
		}
	}
}

func (l *readsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &readsConn{Conn: c, l: l}, nil
}

// readsConn hands what the server reads to its listener, after the tail
// of the last read that could begin a marker.
type readsConn struct {
	net.Conn
	l    *readsListener
	tail []byte
}

const maxMarker = 256

func (c *readsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		buf := append(c.tail, p[:n]...)
		c.l.read(buf)
		c.tail = append([]byte(nil), buf[max(0, len(buf)-maxMarker):]...)
	}
	return n, err
}
