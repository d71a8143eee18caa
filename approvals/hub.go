package approvals

import (
	"context"
	"sync"
)

// subscriberBuffer is how many events an SSE subscriber may fall behind
// before it is dropped (it reconnects and re-reads the state).
const subscriberBuffer = 256

// hub wakes long-polls and feeds SSE streams the moment a change commits.
type hub struct {
	mu      sync.Mutex
	waiters map[string]map[chan Request]struct{}
	subs    map[*subscriber]struct{}
}

type subscriber struct {
	agent string
	ch    chan Event
	done  bool
}

func newHub() *hub {
	return &hub{waiters: map[string]map[chan Request]struct{}{}, subs: map[*subscriber]struct{}{}}
}

// wait returns a channel that receives request id once it is finished
// (so the waiter need not read it again), and a cancel func.
func (h *hub) wait(id string) (<-chan Request, func()) {
	ch := make(chan Request, 1)
	h.mu.Lock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[chan Request]struct{}{}
	}
	h.waiters[id][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		if set, ok := h.waiters[id]; ok {
			if _, still := set[ch]; still {
				delete(set, ch)
				if len(set) == 0 {
					delete(h.waiters, id)
				}
			}
		}
		h.mu.Unlock()
	}
}

func (h *hub) subscribe(ctx context.Context, agent string) <-chan Event {
	s := &subscriber{agent: agent, ch: make(chan Event, subscriberBuffer)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		h.mu.Lock()
		h.drop(s)
		h.mu.Unlock()
	}()
	return s.ch
}

// drop removes a subscriber; h.mu must be held.
func (h *hub) drop(s *subscriber) {
	if !s.done {
		s.done = true
		delete(h.subs, s)
		close(s.ch)
	}
}

// waiting lists the requests someone waits for.
func (h *hub) waiting() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.waiters))
	for id := range h.waiters {
		out = append(out, id)
	}
	return out
}

// interested reports whether an event of request id would reach anyone:
// a waiter on it, or any SSE stream.
func (h *hub) interested(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters[id]) > 0 || len(h.subs) > 0
}

func (h *hub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// A notification is no news of the request's status (waiters had it
	// at once), and goes to admin streams only: they see every agent's.
	notification := e.Kind == EventNotification
	if e.Request.Status.Finished() && !notification {
		for ch := range h.waiters[e.Request.ID] {
			ch <- e.Request // buffered, and each waiter is sent one event: never blocks
		}
		delete(h.waiters, e.Request.ID)
	}
	for s := range h.subs {
		if s.agent != "" && (notification || s.agent != e.Request.Agent) {
			continue
		}
		select {
		case s.ch <- e:
		default:
			h.drop(s) // too slow: it reconnects rather than miss events silently
		}
	}
}
