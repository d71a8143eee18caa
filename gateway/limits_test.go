package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
)

// TestAPI_CallbackURL_Refused: a callback_url outside the agent's
// agents[].callbacks, with credentials, or at a loopback or link-local
// address its patterns do not name is refused with 400
// invalid_callback_url naming the rule, and no request is created.
func TestAPI_CallbackURL_Refused(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(c *config.Config) {
		c.Agents[1].Callbacks = []string{"https://ci.example.com/hooks/*"}
		c.Agents[2].Callbacks = nil
	}})
	for _, tc := range []struct{ name, url, says string }{
		{"outside the patterns", "https://evil.example.com/hooks/x", "agents[].callbacks"},
		{"userinfo", "https://user:pw@ci.example.com/hooks/x", "no user or password"},
		{"userinfo hiding the host", "https://ci.example.com@evil.example.com/hooks/x", "no user or password"},
		{"metadata address", "http://169.254.169.254/latest/meta-data", "agents[].callbacks"},
		{"loopback", "http://127.0.0.1:9/hooks/x", "agents[].callbacks"},
		{"deeper path", "https://ci.example.com/hooks/x/y", "agents[].callbacks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := pendingBody("cbu-"+tc.name, "x.txt")
			body["callback_url"] = tc.url
			r := g.want(t, http.StatusBadRequest, "POST", "/v1/requests", tokA1, body)
			if !strings.Contains(string(r.Body), `"invalid_callback_url"`) || !strings.Contains(string(r.Body), tc.says) {
				t.Errorf("answer %s, want invalid_callback_url naming %q", r.Body, tc.says)
			}
		})
	}
	// a2 has no callbacks at all.
	body := pendingBody("cbu-none", "x.txt")
	body["callback_url"] = "https://ci.example.com/hooks/x"
	if r := g.want(t, http.StatusBadRequest, "POST", "/v1/requests", tokA2, body); !strings.Contains(string(r.Body), "callbacks is empty") {
		t.Errorf("agent without callbacks: %s", r.Body)
	}
	if n, _ := g.App.Service.CountPending(context.Background()); n != 0 {
		t.Errorf("%d requests pending after refusals, want 0", n)
	}
}

// TestAPI_CallbackURL_ResolvedAddressChecked: a name its pattern allows
// but that resolves to 127.0.0.1 is refused when the callback is sent,
// on every attempt: the server listening there never hears of it.
func TestAPI_CallbackURL_ResolvedAddressChecked(t *testing.T) {
	t.Parallel()
	cs := newCallbackServer(t, 0)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(cs.URL, "http://"))
	lookups := make(chan string, 16)
	g := startE2E(t, e2eOptions{clock: newTestClock(),
		mutate: func(c *config.Config) { c.Agents[1].Callbacks = []string{"http://hooks.example.com:*/approve"} },
		resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
			lookups <- host
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}})
	body := pendingBody("cbr-dns", "x.txt")
	body["callback_url"] = "http://hooks.example.com:" + port + "/approve"
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, body).request(t)
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", tokAdmin, jsonBody{"decision": "deny"})
	// Two attempts: the first one finished (refused) before the retry began.
	for range 2 {
		select {
		case h := <-lookups:
			if h != "hooks.example.com" {
				t.Errorf("looked up %q", h)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the callback was not attempted")
		}
	}
	select {
	case c := <-cs.calls:
		t.Fatalf("the callback reached 127.0.0.1 through a name: %s", c.Body)
	default:
	}
}

// TestAPI_MaxPending: past agents[].max_pending a request that would wait
// is refused with 429 too_many_pending; one decided at once is not, and a
// decision frees a place.
func TestAPI_MaxPending(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(c *config.Config) { c.Agents[1].MaxPending = 2 }})
	a := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("mp-1", "a.txt")).request(t)
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("mp-2", "b.txt"))
	r := g.want(t, http.StatusTooManyRequests, "POST", "/v1/requests", tokA1, pendingBody("mp-3", "c.txt"))
	if !strings.Contains(string(r.Body), `"too_many_pending"`) {
		t.Errorf("answer %s, want too_many_pending", r.Body)
	}
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokA1, decidedNowBody("mp-now"))
	// A repeat of a pending call_id is its request, not a new one.
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("mp-2", "b.txt"))
	// Another agent has its own cap.
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA2, pendingBody("mp-a2", "a.txt"))
	g.want(t, http.StatusOK, "POST", "/v1/requests/"+a.ID+"/decision", tokAdmin, jsonBody{"decision": "deny"})
	g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("mp-3", "c.txt"))
}

// TestAPI_MaxStreams: past agents[].max_streams open SSE streams and
// long-polls, the next is refused with 429 too_many_streams; closing one
// frees its place.
func TestAPI_MaxStreams(t *testing.T) {
	t.Parallel()
	g := startE2E(t, e2eOptions{clock: newTestClock(), mutate: func(c *config.Config) { c.Agents[1].MaxStreams = 2 }})
	p := g.want(t, http.StatusAccepted, "POST", "/v1/requests", tokA1, pendingBody("ms-1", "a.txt")).request(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", g.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tokA1)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := stream(), stream()
	if first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("two streams: %d %d, want 200 200", first.StatusCode, second.StatusCode)
	}
	refused := g.want(t, http.StatusTooManyRequests, "GET", "/v1/requests/"+p.ID+"?wait=30s", tokA1, nil)
	if !strings.Contains(string(refused.Body), `"too_many_streams"`) {
		t.Errorf("long-poll past the cap: %s, want too_many_streams", refused.Body)
	}
	g.want(t, http.StatusTooManyRequests, "POST", "/v1/requests?wait=30s", tokA1, pendingBody("ms-2", "b.txt"))
	if third := stream(); third.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third stream: %d, want 429", third.StatusCode)
	} else {
		third.Body.Close()
	}
	// Polling without ?wait is never refused; another agent has its own cap.
	g.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, tokA1, nil)
	g.want(t, http.StatusAccepted, "POST", "/v1/requests?wait=0s", tokA2, pendingBody("ms-a2", "a.txt"))
	// Closing a stream frees its place (once the server has seen it close).
	first.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := stream()
		s.Body.Close()
		if s.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed stream's place was not freed: %d", s.StatusCode)
		}
	}
	second.Body.Close()
}
