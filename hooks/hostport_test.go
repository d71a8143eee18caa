package hooks_test

import (
	"context"
	"testing"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// TestHosts_EveryAdapterSendsThePort: every adapter's fetch tool sends
// the URL's host with its port, so the guard tells a local dev server
// (localhost:3000) from the gateway on its own port (8080).
func TestHosts_EveryAdapterSendsThePort(t *testing.T) {
	fetch := map[string]func(u string) string{
		"claude-code": func(u string) string {
			return rawEvent("claude-code", "WebFetch", "/w", map[string]any{"url": u, "prompt": "x"})
		},
		"gemini": func(u string) string { return geminiEvent("web_fetch", map[string]any{"url": u, "prompt": "x"}) },
		"qwen": func(u string) string {
			return qwenEvent("PreToolUse", "web_fetch", map[string]any{"url": u, "prompt": "x"})
		},
		"opencode": func(u string) string { return openCodeEvent("webfetch", map[string]any{"url": u, "format": "text"}) },
	}
	v := vaglio.New(vaglio.Options{Home: "/home/r", Own: vaglio.Own{Endpoints: []vaglio.Endpoint{{Host: "localhost", Port: "8080"}}}})
	t.Cleanup(func() { v.Close() })
	d := &policy.Decider{Vaglio: v}
	for adapter, raw := range fetch {
		for _, tc := range []struct {
			url, target string
			gateway     bool
		}{
			{"http://localhost:3000/", "localhost:3000", false},
			{"http://127.0.0.1:8080/v1/requests", "127.0.0.1:8080", true},
			{"http://[::1]:8080/", "[::1]:8080", true},
			{"https://docs.python.org/3/", "docs.python.org:443", false},
		} {
			cs := mapRaw(t, adapter, raw(tc.url), nil)
			if len(cs) != 1 || cs[0].Capability != "network:http" || cs[0].Target != tc.target {
				t.Errorf("%s %s: %+v, want network:http %q", adapter, tc.url, cs, tc.target)
				continue
			}
			dec, err := d.Decide(context.Background(), policy.Input{Profile: policy.Profile{Agent: "a", Ceiling: policy.Full},
				Capability: "network:http", Target: cs[0].Target})
			if err != nil {
				t.Fatal(err)
			}
			if got := dec.Outcome == policy.Denied && dec.BlockedBy == policy.BlockedByGuard; got != tc.gateway {
				t.Errorf("%s %s: %s (%s), want the gateway: %v", adapter, tc.url, dec.Outcome, dec.Reason, tc.gateway)
			}
		}
	}
}
