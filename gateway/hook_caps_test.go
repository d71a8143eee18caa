package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/hooks"
)

// TestHook_ThousandWaitsHoldAtTheCap: 1,000 concurrent hook calls of one
// token that each need a person. A hook's wait is one of the agent's
// max_streams (a repeated tool_use_id too), and its requests count toward
// max_pending: exactly the cap's worth wait, every other call is answered
// at once with a 200 deny naming the cap, and none gets an error status;
// once the waiting ones are decided they answer too.
func TestHook_ThousandWaitsHoldAtTheCap(t *testing.T) {
	const n = 1000
	for _, tc := range []struct {
		name        string
		maxStreams  int
		dup         bool   // every tenth call repeats one tool_use_id
		held        int    // calls that wait
		reason      string // what the others' deny says
		maxRequests int    // pending requests at most while they wait
	}{
		{"max_streams", config.DefaultMaxStreams, true, config.DefaultMaxStreams, "event streams, long-polls and hook waits open", config.DefaultMaxStreams},
		{"max_pending", 2 * n, false, config.DefaultMaxPending, "requests pending (agents[].max_pending)", config.DefaultMaxPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startHookGateway(t, func(c *config.Config) {
				for i := range c.Agents {
					c.Agents[i].MaxStreams = tc.maxStreams
					c.Agents[i].RateCount, c.Agents[i].RatePer = 100*n, time.Minute
				}
			})
			replies := make(chan hookReply, n)
			for i := range n {
				id, cmd := fmt.Sprintf("toolu_%d", i), fmt.Sprintf("make target-%d", i)
				if tc.dup && i%10 == 0 {
					id, cmd = "toolu_again", "make again"
				}
				body := hookEvent(t, "Bash", id, map[string]any{"command": cmd})
				go func() { replies <- postHook(context.Background(), t, g.url, "", hookAgentToken, body) }()
			}
			check := func(r hookReply) {
				t.Helper()
				if r.status != http.StatusOK || r.out.Decision() != hooks.Deny {
					t.Fatalf("a hook call answered %d %q: %s", r.status, r.out.Decision(), r.body)
				}
			}
			for range n - tc.held {
				r := hookReplyOf(t, replies)
				check(r)
				if !strings.Contains(r.out.Reason(), tc.reason) {
					t.Fatalf("a call past the cap was denied for %q, want %q", r.out.Reason(), tc.reason)
				}
			}
			// The rest wait, each on a pending request: never more than
			// the cap. A held call may still be inserting its request, so
			// deny what is pending until every held call has answered.
			select {
			case r := <-replies:
				t.Fatalf("more than %d calls past the cap: %d %s", n-tc.held, r.status, r.body)
			default:
			}
			deadline := time.After(60 * time.Second)
			for answered := 0; answered < tc.held; {
				pending, err := g.app.Service.ListPending(context.Background(), 10*n)
				if err != nil {
					t.Fatal(err)
				}
				if len(pending) > tc.maxRequests {
					t.Fatalf("%d requests pending while %d calls wait, want at most %d", len(pending), tc.held, tc.maxRequests)
				}
				for _, p := range pending {
					if _, err := g.admin.Decide(context.Background(), p.ID, "deny"); err != nil && !alreadyDecided(err) {
						t.Fatalf("deny %s: %v", p.ID, err)
					}
				}
				select {
				case r := <-replies:
					check(r)
					if strings.Contains(r.out.Reason(), tc.reason) {
						t.Fatalf("a waiting call answered %q", r.out.Reason())
					}
					answered++
				case <-time.After(100 * time.Millisecond):
				case <-deadline:
					t.Fatalf("%d of %d waiting calls answered within 60s of the denials", answered, tc.held)
				}
			}
			if got, _ := g.app.Service.ListPending(context.Background(), 10); len(got) != 0 {
				t.Errorf("%d requests still pending", len(got))
			}
		})
	}
}

// alreadyDecided: a request the loop denied before (or an expiry) is not
// denied again.
func alreadyDecided(err error) bool {
	var api *client.APIError
	return errors.As(err, &api) && api.Code == "already_decided"
}
