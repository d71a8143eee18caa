package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/metnos/gateway/hooks"
)

// pairWindow is how long after the first event of a pair was answered
// the second is answered from it: the agent fires it right away, so a
// later event with the same capability and target is another tool call.
const pairWindow = 30 * time.Second

// hookPairs remembers the requests of the first event of a pair (hooks.
// PairLead), so the second (hooks.PairFollow) of the same tool call is
// answered from them: one tool call, one card, one wait. Each is used at
// most once. It is this process's memory: behind several replicas a
// second event that reaches another one asks again (a second card, never
// an answer it should not have).
type hookPairs struct {
	mu sync.Mutex
	m  map[pairKey]pairEntry
}

type pairKey struct {
	agent, token, adapter, session, capability, target string
}

type pairEntry struct {
	id       string
	answered time.Time // zero while the first event still waits
}

func newPairKey(a *Agent, adapter string, c hooks.Call) pairKey {
	return pairKey{a.ID, a.tokenID(), adapter, c.SessionID, c.Capability, c.Target}
}

// put remembers req as the request of c.
func (p *hookPairs) put(k pairKey, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[pairKey]pairEntry{}
	}
	now := time.Now()
	for key, e := range p.m {
		if !e.answered.IsZero() && now.Sub(e.answered) > pairWindow {
			delete(p.m, key)
		}
	}
	p.m[k] = pairEntry{id: id}
}

// answered starts the window of the requests under keys.
func (p *hookPairs) answered(keys []pairKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, k := range keys {
		if e, ok := p.m[k]; ok && e.answered.IsZero() {
			e.answered = now
			p.m[k] = e
		}
	}
}

// take finds and forgets the request of every key; ok only when each has
// one within the window.
func (p *hookPairs) take(keys []pairKey) (ids []string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, k := range keys {
		e, found := p.m[k]
		if !found || (!e.answered.IsZero() && now.Sub(e.answered) > pairWindow) {
			return nil, false
		}
		ids = append(ids, e.id)
	}
	for _, k := range keys {
		delete(p.m, k)
	}
	return ids, true
}

// followVerdict answers the second event of a pair from the first's
// requests, waiting (within wait) on one still pending: the same request,
// so no second card. ok is false when there is no first event to answer
// from: the event is then asked about on its own.
func (s *Server) followVerdict(ctx context.Context, a *Agent, adapter string, calls []hooks.Call, wait time.Duration) (hooks.Verdict, bool) {
	keys := make([]pairKey, len(calls))
	for i, c := range calls {
		keys[i] = newPairKey(a, adapter, c)
	}
	ids, ok := s.pairs.take(keys)
	if !ok {
		return hooks.Verdict{}, false
	}
	verdicts := make([]hooks.Verdict, len(ids))
	for i, id := range ids {
		req, err := s.svc.Wait(ctx, id, wait)
		if err != nil {
			return hooks.VerdictOf(hooks.Failed(err)), true
		}
		verdicts[i] = hooks.VerdictOf(hooks.Decide(hookResult(req)))
	}
	return hooks.Combine(verdicts), true
}
