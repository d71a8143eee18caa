package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHook_PassesTheAgentsTrace: `gateway hook` sends its agent's trace
// (TRACEPARENT, TRACESTATE in its environment) as the W3C headers, so the
// gateway's spans join the agent's trace; a malformed one is not sent.
func TestHook_PassesTheAgentsTrace(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got := make(chan [2]string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/hooks/") {
			got <- [2]string{r.Header.Get("traceparent"), r.Header.Get("tracestate")}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, tp, ts, wantTP, wantTS string
	}{
		{"well formed", tp, "vendor=opaque", tp, "vendor=opaque"},
		{"no tracestate", tp, "", tp, ""},
		{"malformed", "00-not-a-trace", "vendor=opaque", "", ""},
		{"a traceparent with a line break", tp + "\r\nX-Evil: 1", "", "", ""},
		{"a tracestate with a line break", tp, "a=1\r\nX-Evil: 1", tp, ""},
		{"none", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(context.Background(), agentEnv(t, srv.URL, "TRACEPARENT", tc.tp, "TRACESTATE", tc.ts),
				preToolUse(t, "Bash", "toolu_trace", map[string]any{"command": "make deploy"}), "hook", "claude-code")
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			h := <-got
			if h[0] != tc.wantTP || h[1] != tc.wantTS {
				t.Fatalf("headers traceparent %q tracestate %q, want %q %q", h[0], h[1], tc.wantTP, tc.wantTS)
			}
		})
	}
}

// TestAsk_PassesTheCallersTrace: `gateway ask` sends its caller's trace
// (TRACEPARENT, TRACESTATE) as the W3C headers, as a hook does, so the
// request's spans join it; a malformed one is not sent.
func TestAsk_PassesTheCallersTrace(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got := make(chan [2]string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/requests" {
			got <- [2]string{r.Header.Get("traceparent"), r.Header.Get("tracestate")}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"r1","capability":"fs:read","target":"/tmp/x","outcome":"allowed","status":"allowed"}`)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, tp, ts, wantTP, wantTS string
	}{
		{"well formed", tp, "vendor=opaque", tp, "vendor=opaque"},
		{"malformed", "00-not-a-trace", "vendor=opaque", "", ""},
		{"none", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(context.Background(), agentEnv(t, srv.URL, "TRACEPARENT", tc.tp, "TRACESTATE", tc.ts), "",
				"ask", "--capability", "fs:read", "--target", "/tmp/x")
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			h := <-got
			if h[0] != tc.wantTP || h[1] != tc.wantTS {
				t.Fatalf("headers traceparent %q tracestate %q, want %q %q", h[0], h[1], tc.wantTP, tc.wantTS)
			}
		})
	}
}
