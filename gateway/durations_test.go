package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAPI_DurationsAsInTheConfig: the API's ttl (grants, tokens) takes
// "90d" as the config file does, and a bad one answers 400 invalid_ttl in
// the config file's words.
func TestAPI_DurationsAsInTheConfig(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	g := startE2E(t, e2eOptions{clock: clock})
	var grant struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	decodeInto(t, string(g.want(t, http.StatusCreated, "POST", "/v1/grants", tokAdmin,
		jsonBody{"channel": "web", "sender_id": "a1", "capability": "fs:read", "target": "/srv/*", "ttl": "90d"}).Body), &grant)
	if want := clock.Now().Add(90 * 24 * time.Hour); !grant.ExpiresAt.Equal(want) {
		t.Errorf("grant ttl 90d: expires %s, want %s", grant.ExpiresAt, want)
	}
	child := makeToken(t, g, tokA1, jsonBody{"ttl": "90d"})
	if exp, err := time.Parse(time.RFC3339, child.ExpiresAt); err != nil || !exp.Equal(clock.Now().Add(90*24*time.Hour)) {
		t.Errorf("token ttl 90d: expires %s (%v)", child.ExpiresAt, err)
	}
	for _, path := range []string{"/v1/grants", "/v1/tokens"} {
		tok, body := tokA1, jsonBody{"ttl": "90 days"}
		if path == "/v1/grants" {
			tok, body = tokAdmin, jsonBody{"channel": "web", "sender_id": "a1", "capability": "fs:read", "target": "/srv/*", "ttl": "90 days"}
		}
		e := g.want(t, http.StatusBadRequest, "POST", path, tok, body).apiError(t)
		if e.Error.Code != "invalid_ttl" || !strings.Contains(e.Error.Message, `bad duration "90 days" (want e.g. "90s", "10m", "2160h" or "90d")`) {
			t.Errorf("POST %s ttl '90 days': %+v", path, e)
		}
	}
	// ?wait= too, wherever it is taken: "3x" is refused, not read as 3 s.
	e := g.want(t, http.StatusBadRequest, "POST", "/v1/requests?wait=3x", tokA1, jsonBody{"capability": "llm:local"}).apiError(t)
	if e.Error.Code != "invalid_wait" || !strings.Contains(e.Error.Message, `bad duration "3x" (want e.g. "90s", "10m", "2160h" or "90d")`) {
		t.Errorf("POST /v1/requests?wait=3x: %+v", e)
	}
	hook := g.want(t, http.StatusOK, "POST", "/v1/hooks/codex?wait=3x", tokA1, jsonBody{"hook_event_name": "PreToolUse"})
	if !strings.Contains(string(hook.Body), `bad duration \"3x\"`) {
		t.Errorf("a hook's ?wait=3x: %s", hook.Body)
	}
}
