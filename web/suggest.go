package web

import (
	"context"
	"sync"
	"time"

	"github.com/metnos/gateway/replay"
)

// suggestEvery is the least time between two background computations of
// the web page's suggestions that page loads ask for.
const suggestEvery = 5 * time.Second

// suggestTimeout bounds one computation.
const suggestTimeout = time.Minute

// suggester computes the web page's suggestions in the background, so
// that a load of the page costs no more than its lists: the page shows
// the last result and asks for a newer one. One computation runs at a
// time; asks that arrive while one runs are served by one more, at most
// every suggestEvery (unless a caller waits for it: fresh).
type suggester struct {
	s       *server
	mu      sync.Mutex
	rows    []replay.Suggestion
	asked   uint64 // computations asked for
	done    uint64 // computations finished (the result is of the asked count it started for)
	urgent  bool   // a caller waits: no spacing
	running bool
	last    time.Time     // when the last one finished
	changed chan struct{} // closed and replaced when one finishes
}

func newSuggester(s *server) *suggester {
	return &suggester{s: s, changed: make(chan struct{})}
}

// latest is the last result, and asks for a newer one.
func (g *suggester) latest() []replay.Suggestion {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ask(false)
	return g.rows
}

// fresh asks for a computation that starts after this call and waits for
// its result.
func (g *suggester) fresh(ctx context.Context) ([]replay.Suggestion, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	want := g.ask(true)
	for g.done < want {
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			g.mu.Lock()
			return nil, ctx.Err()
		}
		g.mu.Lock()
	}
	return g.rows, nil
}

// ask counts one more ask and starts the worker when none runs (g.mu
// held); it returns the count the ask is served by.
func (g *suggester) ask(urgent bool) uint64 {
	g.asked++
	g.urgent = g.urgent || urgent
	if !g.running {
		g.running = true
		go g.run()
	}
	return g.asked
}

// run computes while asks are unserved, then ends.
func (g *suggester) run() {
	ctx, stop := g.s.untilShutdown(context.Background())
	defer stop()
	g.mu.Lock()
	for g.done < g.asked {
		if wait := suggestEvery - g.s.now().Sub(g.last); !g.urgent && !g.last.IsZero() && wait > 0 {
			g.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				g.mu.Lock()
				g.running = false
				g.mu.Unlock()
				return
			}
			g.mu.Lock()
			continue
		}
		target := g.asked
		g.urgent = false
		g.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, suggestTimeout)
		rows, err := g.s.Suggest(cctx, SuggestWindow, SuggestMin)
		cancel()
		if err != nil && ctx.Err() == nil {
			g.s.log.Error("web page: suggestions", "err", err)
		}
		g.mu.Lock()
		if err == nil {
			g.rows = rows
		}
		g.done, g.last = target, g.s.now()
		close(g.changed)
		g.changed = make(chan struct{})
	}
	g.running = false
	g.mu.Unlock()
}
