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
	waiters map[string]map[chan struct{}]struct{}
	subs    map[*subscriber]struct{}
}

type subscriber struct {
	agent string
	ch    chan Event
	done  bool
}

func newHub() *hub {
	return &hub{waiters: map[string]map[chan struct{}]struct{}{}, subs: map[*subscriber]struct{}{}}
}

// wait returns a channel closed when request id changes, and a cancel func.
func (h *hub) wait(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	if h.waiters[id] == nil {
		h.waiters[id] = map[chan struct{}]struct{}{}
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

func (h *hub) publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Request.Status.Finished() {
		for ch := range h.waiters[e.Request.ID] {
			close(ch)
		}
		delete(h.waiters, e.Request.ID)
	}
	for s := range h.subs {
		if s.agent != "" && s.agent != e.Request.Agent {
			continue
		}
		select {
		case s.ch <- e:
		default:
			h.drop(s) // too slow: it reconnects rather than miss events silently
		}
	}
}
