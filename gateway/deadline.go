package gateway

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// BodyTimeout bounds how long a client may take to send a request's body.
// The connection's read deadline is set when the request arrives and lifted
// once the handler has read the body to its end, so a long-poll, an SSE
// stream or a streamable /mcp call keeps its own bounds (MaxWait, the
// heartbeats) after a body sent in time, while a client that trickles its
// body byte by byte is cut off.
const BodyTimeout = 15 * time.Second

// bodyDeadline applies BodyTimeout (s.bodyTimeout) to every request that
// has a body. It must wrap the server's own ResponseWriter (outermost).
func (s *Server) bodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		// One allocation: the body holds the controller it sets the
		// deadline with.
		b := &deadlineBody{ReadCloser: r.Body, rc: *http.NewResponseController(w)}
		if err := b.rc.SetReadDeadline(time.Now().Add(s.bodyTimeout)); err != nil {
			h.ServeHTTP(w, r) // not a connection that has deadlines (a test recorder)
			return
		}
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline when the body has been read to its
// end. A read cut off by the deadline is reported as such.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	rc   http.ResponseController // a copy: one allocation per body, where a closure and the controller cost two, then three
}

// lift lifts the read deadline.
func (b *deadlineBody) lift() { _ = b.rc.SetReadDeadline(time.Time{}) }

// ErrSlowBody is the read error of a body not sent within BodyTimeout.
var ErrSlowBody = errors.New("request body not sent in time")

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.once.Do(b.lift)
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = ErrSlowBody
	}
	return n, err
}
