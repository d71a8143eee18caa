package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/metnos/gateway/config"
)

// TestAPI_Tokens_ChildrenStopAtTheCap: 5,000 child-token creations of one
// agent (at once, from 20 callers, children of children among them) stop
// at max_children live tokens: exactly that many are made, every other
// creation is a 429 too_many_children, never a 5xx; a revoke makes room
// again. An agent at its rate gets 429 rate_limited for creations past it.
func TestAPI_Tokens_ChildrenStopAtTheCap(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	const n, callers = 5000, 20
	first := makeToken(t, g, tokA1, jsonBody{"ttl": "1h"})
	statuses := make(chan apiResult, n)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := tokA1
			if c%2 == 1 {
				tok = first.Token // a child makes children too: they count the same
			}
			for range (n - 1) / callers {
				r, err := g.try("POST", "/v1/tokens", tok, jsonBody{"ttl": "1h"})
				if err != nil {
					t.Error(err)
					return
				}
				statuses <- r
			}
		}()
	}
	wg.Wait()
	close(statuses)
	made, capped := 1, 0
	for r := range statuses {
		switch {
		case r.Status == http.StatusCreated:
			made++
		case r.Status == http.StatusTooManyRequests && strings.Contains(string(r.Body), `"too_many_children"`):
			capped++
		default:
			t.Fatalf("a creation answered %d %s", r.Status, r.Body)
		}
	}
	if made != config.DefaultMaxChildren || made+capped != 1+(n-1)/callers*callers {
		t.Fatalf("%d child tokens made and %d refused, want %d made", made, capped, config.DefaultMaxChildren)
	}
	var live int
	if err := g.App.DB.QueryRowContext(context.Background(),
		`SELECT COUNT(*) FROM agent_tokens WHERE agent = 'a1' AND revoked_at IS NULL`).Scan(&live); err != nil || live != made {
		t.Fatalf("%d live tokens stored (%v), want %d", live, err, made)
	}
	g.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+first.ID, tokA1, nil) // with its descendants
	makeToken(t, g, tokA1, jsonBody{"ttl": "1h"})

	// lim's rate is 2/m: its creations take from a bucket of their own.
	makeToken(t, g, tokLimited, jsonBody{"ttl": "1h"})
	makeToken(t, g, tokLimited, jsonBody{"ttl": "1h"})
	r := g.do(t, "POST", "/v1/tokens", tokLimited, jsonBody{"ttl": "1h"})
	if r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), `"rate_limited"`) ||
		!strings.Contains(string(r.Body), "child tokens") {
		t.Fatalf("lim's third creation: %d %s", r.Status, r.Body)
	}
}
