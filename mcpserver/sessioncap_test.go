package mcpserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTP_SessionCap: an agent holding its maximum of MCP sessions gets
// 429 too_many_sessions for another, while another agent does not; a
// deleted session, or one idle past SessionIdleTimeout, makes room.
func TestHTTP_SessionCap(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	verify := func(tok string) string { return map[string]string{"tok-a": "a", "tok-b": "b"}[tok] }
	srv := httptest.NewServer(httpHandler(func(*http.Request) *mcp.Server { return s }, verify, slog.New(slog.DiscardHandler), 2, clock))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { Close(s) })
	do := func(method, tok, session string) *http.Response {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+tok)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var ids []string
	for range 2 {
		resp := do(http.MethodPost, "tok-a", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize: %s", resp.Status)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	if resp := do(http.MethodPost, "tok-a", ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third session: %s, want 429", resp.Status)
	}
	if resp := do(http.MethodPost, "tok-b", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("another agent's session: %s", resp.Status)
	}
	do(http.MethodDelete, "tok-a", ids[0])
	if resp := do(http.MethodPost, "tok-a", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("after a delete: %s", resp.Status)
	}
	if resp := do(http.MethodPost, "tok-a", ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("full again: %s, want 429", resp.Status)
	}
	mu.Lock()
	now = now.Add(SessionIdleTimeout)
	mu.Unlock()
	if resp := do(http.MethodPost, "tok-a", ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the idle timeout: %s", resp.Status)
	}
}
