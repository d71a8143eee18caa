package gateway

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/metnos/gateway/config"
)

// slots counts what each key (an agent id) holds open, against a cap. It
// lives in this process: with several replicas each counts its own
// connections, which is what it bounds.
type slots struct {
	mu   sync.Mutex
	open map[string]int
}

func newSlots() *slots { return &slots{open: map[string]int{}} }

// take takes one of key's max slots; ok is false when all are taken.
// release gives it back (once; further calls do nothing).
func (s *slots) take(key string, max int) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key] >= max {
		return nil, false
	}
	s.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.open[key]--; s.open[key] <= 0 {
				delete(s.open, key)
			}
		})
	}, true
}

// tooManyStreamsError refuses a wait past the agent's cap.
type tooManyStreamsError struct {
	agent string
	max   int
}

func (e *tooManyStreamsError) Error() string {
	return fmt.Sprintf("agent %s has %d event streams, long-polls and hook waits open (agents[].max_streams); close one, or poll without ?wait", e.agent, e.max)
}

// takeStream takes one of the agent's stream slots, or answers 429
// too_many_streams and returns ok false.
func (s *Server) takeStream(w http.ResponseWriter, r *http.Request, a *Agent) (release func(), ok bool) {
	max := maxStreams(a)
	release, ok = s.streams.take(a.ID, max)
	if !ok {
		s.errorResponse(w, r, &tooManyStreamsError{agent: a.ID, max: max})
	}
	return release, ok
}

// maxStreams is a's cap on open waits (agents[].max_streams).
func maxStreams(a *Agent) int {
	if a.MaxStreams <= 0 {
		return config.DefaultMaxStreams
	}
	return a.MaxStreams
}
