package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/metnos/gateway/client"
)

// TestHTTP_ChildToken: a sub-agent's child token works over /mcp too: its
// calls act as its root agent, carry its token_id, and stay within its
// narrowed profile.
func TestHTTP_ChildToken(t *testing.T) {
	g := startGateway(t)
	body, _ := json.Marshal(map[string]any{"ttl": "1h", "name": "mcp-sub", "allow_capabilities": []string{"llm:local"}})
	req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/tokens", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tokenA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var child struct{ ID, Token string }
	if err := json.NewDecoder(resp.Body).Decode(&child); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/tokens: %d %v", resp.StatusCode, err)
	}
	cs := httpSession(t, g.URL, child.Token)
	r := request(t, toolCall(t, cs, "request_approval", map[string]any{"capability": "llm:local"}))
	if r.Agent != "a" || r.TokenID != child.ID || r.TokenName != "mcp-sub" || r.Status != client.StatusAllowed {
		t.Fatalf("child's call: %+v", r)
	}
	r = request(t, toolCall(t, cs, "request_approval", map[string]any{"capability": "network:http", "target": "example.com"}))
	if r.Status != client.StatusDenied {
		t.Fatalf("outside the child's allow list: %s (%s)", r.Status, r.Reason)
	}
}
