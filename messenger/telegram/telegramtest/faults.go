// The faults a test injects into the fake Bot API: error answers (429 with
// retry_after, 5xx, an HTML page), hung and delayed calls, and latency.

package telegramtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Fault is a failure to inject on calls of one method.
type Fault struct {
	// Status is the HTTP status and error_code: 429, 500, 502 …
	Status int
	// RetryAfter is parameters.retry_after, in seconds (for 429).
	RetryAfter int
	// Description overrides the error description.
	Description string
	// HTML answers with an HTML page instead of JSON, as a proxy in front
	// of the API would.
	HTML bool
	// Hang holds the call until the client gives up or the fake closes.
	Hang bool
	// Delay holds the call this long before answering (normally, when
	// Status is 0).
	Delay time.Duration
	// Times is how many calls the fault hits; 0 means every call.
	Times int
	// Until ends the fault at this time; zero means no end.
	Until time.Time
}

// SetLatency changes the artificial latency of every answer.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = d
	s.mu.Unlock()
}

// Inject adds a fault on method ("" for every method but getUpdates,
// whose faults must be named explicitly so a broad outage does not also
// stall the test's own update delivery).
func (s *Server) Inject(method string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], &f)
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]*Fault{}
}

func faultDescription(f *Fault) string {
	switch f.Status {
	case http.StatusTooManyRequests:
		return fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter)
	case http.StatusInternalServerError:
		return "Internal Server Error"
	}
	return http.StatusText(f.Status)
}

func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) takeFault(method string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := []string{method}
	if method != "getUpdates" {
		keys = append(keys, "")
	}
	now := time.Now()
	for _, k := range keys {
		for i, f := range s.faults[k] {
			if !f.Until.IsZero() && now.After(f.Until) {
				continue
			}
			if f.Times > 0 {
				f.Times--
				if f.Times == 0 {
					s.faults[k] = slices.Delete(s.faults[k], i, i+1)
				}
			}
			return f
		}
	}
	return nil
}
