package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
	"github.com/metnos/gateway/web/webtest"
)

// newTokenBody is POST /v1/tokens's answer.
type newTokenBody struct {
	ID        string              `json:"id"`
	Token     string              `json:"token"`
	ExpiresAt string              `json:"expires_at"`
	Profile   policy.TokenProfile `json:"profile"`
	Narrowed  []policy.Narrowed   `json:"narrowed"`
}

func makeToken(tb testing.TB, g *e2eGateway, tok string, body jsonBody) newTokenBody {
	tb.Helper()
	var out newTokenBody
	r := g.want(tb, http.StatusCreated, "POST", "/v1/tokens", tok, body)
	if err := json.Unmarshal(r.Body, &out); err != nil || out.Token == "" {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
	return out
}

func TestAPI_Tokens_ChildActsAsRootNarrowed(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	// a1 (Supervised) makes a child for a refactoring sub-agent, asking for more than it has.
	child := makeToken(t, g, tokA1, jsonBody{"ttl": "2h", "name": "refactor-bot", "autonomy": "Full",
		"allow_capabilities": []string{"fs:read", "fs:write", "llm:local"}, "deny_capabilities": []string{"llm:local"},
		"targets": map[string][]string{"fs:write": {"/srv/app/**"}}, "max_requests": 5})
	if child.Profile.Autonomy != policy.Supervised || len(child.Narrowed) != 1 || child.Narrowed[0].Field != "autonomy" {
		t.Fatalf("child: %+v", child)
	}
	if !strings.HasPrefix(child.Token, policy.ChildTokenPrefix) {
		t.Fatalf("token %q", child.Token)
	}

	// Its requests act as a1: same principal, same grants; they carry token_id.
	r := g.want(t, http.StatusAccepted, "POST", "/v1/requests", child.Token,
		jsonBody{"call_id": "k1", "capability": "fs:write", "target": "/srv/app/main.go", "intent": "refactor"}).request(t)
	if r.Agent != "a1" || r.Channel != "web" || r.SenderID != "a1" || r.TokenID != child.ID || r.TokenName != "refactor-bot" {
		t.Fatalf("child's request: agent %s principal %s/%s token %q %q", r.Agent, r.Channel, r.SenderID, r.TokenID, r.TokenName)
	}
	if r.AgentLine() != "a1 › refactor-bot" {
		t.Errorf("agent line %q", r.AgentLine())
	}
	// The card's Agent line names the token (the web page here; Telegram and Slack render the same card).
	if _, page := webtest.PageAs(t, g.App, g.URL, "owner"); !strings.Contains(page, "a1 › refactor-bot") {
		t.Errorf("the web card lacks the agent line a1 › refactor-bot")
	}
	if got := g.want(t, http.StatusOK, "POST", "/v1/requests/"+r.ID+"/decision", tokAdmin,
		jsonBody{"decision": "allow_always"}).request(t); got.GrantID == nil {
		t.Fatalf("no grant: %+v", got)
	}
	// The grant, keyed on a1's principal, serves the parent and the child alike.
	if r := g.do(t, "POST", "/v1/requests", tokA1, jsonBody{"capability": "fs:write", "target": "/srv/app/main.go"}).request(t); r.Status != approvals.StatusAllowed {
		t.Errorf("a1 after the child's allow_always: %s", r.Status)
	}
	rows, err := storage.ListAudit(context.Background(), g.App.DB, r.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var tagged bool
	for _, e := range rows {
		if e.Event == storage.AuditOutcome && e.Detail["token_id"] == child.ID {
			tagged = true
		}
	}
	if !tagged {
		t.Errorf("the outcome audit row lacks token_id: %+v", rows)
	}

	// Never wider: outside its allow list, in its deny list, outside its targets → denied.
	// The reason names the token whose narrowing refused it, not the agent.
	for _, tc := range []struct{ capability, target, reason string }{
		{"network:http", "api.example.com", "network:http is outside the allowed capabilities of token refactor-bot of agent a1"},
		{"llm:local", "", "llm:local is denied to token refactor-bot of agent a1"},
		{"fs:write", "/srv/other/x", "the target is outside the targets token refactor-bot may ask for with fs:write"},
	} {
		r := g.do(t, "POST", "/v1/requests", child.Token, jsonBody{"capability": tc.capability, "target": tc.target}).request(t)
		if r.Status != approvals.StatusDenied || r.Reason != tc.reason {
			t.Errorf("child %s %s: %s (%s), want denied (%s)", tc.capability, tc.target, r.Status, r.Reason, tc.reason)
		}
	}
	// What may I use, as the child.
	var caps struct {
		Capabilities []policy.CapabilityOutcome `json:"capabilities"`
	}
	_ = json.Unmarshal(g.want(t, http.StatusOK, "GET", "/v1/capabilities", child.Token, nil).Body, &caps)
	if len(caps.Capabilities) != 2 || caps.Capabilities[1].Name != "fs:write" || caps.Capabilities[1].Targets[0] != "/srv/app/**" {
		t.Errorf("child's capabilities: %+v", caps.Capabilities)
	}
	// max_requests: 5 requests were made (k1 and the three denied... count them), then 403.
	var last apiResult
	for i := 0; i < 5; i++ {
		last = g.do(t, "POST", "/v1/requests", child.Token, jsonBody{"capability": "fs:read", "target": "/srv/app/x"})
		if last.Status == http.StatusForbidden {
			break
		}
	}
	if last.Status != http.StatusForbidden || last.apiError(t).Error.Code != "token_exhausted" {
		t.Errorf("past max_requests: %d %s", last.Status, last.Body)
	}
	// A child is never an admin, even of an admin agent.
	adminChild := makeToken(t, g, tokAdmin, jsonBody{"ttl": "1h"})
	g.want(t, http.StatusForbidden, "GET", "/v1/policy/rules", adminChild.Token, nil)
	g.want(t, http.StatusForbidden, "POST", "/v1/requests/"+r.ID+"/decision", adminChild.Token, jsonBody{"decision": "deny"})
}

func TestAPI_Tokens_RevokeDescendants(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	a := makeToken(t, g, tokA1, jsonBody{"ttl": "1h", "name": "a"})
	b := makeToken(t, g, a.Token, jsonBody{"ttl": "1h", "name": "b"})
	c := makeToken(t, g, b.Token, jsonBody{"ttl": "1h", "name": "c"})
	other := makeToken(t, g, tokA2, jsonBody{"ttl": "1h"})

	var list struct {
		Tokens []policy.Token `json:"tokens"`
	}
	_ = json.Unmarshal(g.want(t, http.StatusOK, "GET", "/v1/tokens", a.Token, nil).Body, &list)
	if len(list.Tokens) != 1 || list.Tokens[0].ID != b.ID || !list.Tokens[0].Active {
		t.Fatalf("a's children: %+v", list.Tokens)
	}
	// Not yours: 404, as if it did not exist.
	g.want(t, http.StatusNotFound, "DELETE", "/v1/tokens/"+a.ID, tokA2, nil)
	g.want(t, http.StatusNotFound, "DELETE", "/v1/tokens/"+a.ID, b.Token, nil)
	g.want(t, http.StatusNotFound, "DELETE", "/v1/tokens/tnope", tokA1, nil)

	ok := func(tok string) int {
		return g.do(t, "POST", "/v1/check", tok, jsonBody{"capability": "llm:local"}).Status
	}
	for _, tok := range []string{a.Token, b.Token, c.Token, other.Token} {
		if st := ok(tok); st != http.StatusOK {
			t.Fatalf("before the revoke: %d", st)
		}
	}
	r := g.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+a.ID, tokA1, nil)
	if !strings.Contains(string(r.Body), `"tokens":3`) {
		t.Errorf("revoke answered %s", r.Body)
	}
	for _, tok := range []string{a.Token, b.Token, c.Token} {
		if st := ok(tok); st != http.StatusUnauthorized {
			t.Errorf("after the revoke: %d, want 401", st)
		}
	}
	if st := ok(other.Token); st != http.StatusOK {
		t.Errorf("another agent's token after the revoke: %d", st)
	}
	if st := ok(tokA1); st != http.StatusOK {
		t.Errorf("the agent's own token after the revoke: %d", st)
	}
	// Bad input names the field.
	for _, tc := range []struct {
		body jsonBody
		code string
	}{
		{jsonBody{}, "invalid_ttl"},
		{jsonBody{"ttl": "soon"}, "invalid_ttl"},
		{jsonBody{"ttl": "1h", "allow_capabilities": []string{"fs:wirte"}}, "invalid_allow_capabilities"},
		{jsonBody{"ttl": "1h", "targets": map[string][]string{"llm:local": {"x"}}}, "invalid_targets"},
		{jsonBody{"ttl": "1h", "autonomy": "God"}, "invalid_autonomy"},
		{jsonBody{"ttl": "1h", "admin": true}, "unknown_field"},
	} {
		r := g.want(t, http.StatusBadRequest, "POST", "/v1/tokens", tokA1, tc.body)
		if e := r.apiError(t); e.Error.Code != tc.code {
			t.Errorf("%v: code %q, want %q", tc.body, e.Error.Code, tc.code)
		}
	}
}

// TestReplicas_TokenRevokeSeenAtOnce_Postgres: a child token revoked on
// one replica is refused by the other on its very next call, with its
// descendants.
func TestReplicas_TokenRevokeSeenAtOnce_Postgres(t *testing.T) {
	dsn := storagetest.FreshSchema(t)
	onPG := func(cfg *config.Config) { cfg.Storage.Driver, cfg.Storage.DSN = "postgres", dsn }
	one := startE2E(t, e2eOptions{mutate: onPG})
	two := startE2E(t, e2eOptions{mutate: onPG})
	a := makeToken(t, one, tokA1, jsonBody{"ttl": "1h", "name": "worker"})
	b := makeToken(t, two, a.Token, jsonBody{"ttl": "1h"}) // made on the other replica with the child
	r := two.want(t, http.StatusAccepted, "POST", "/v1/requests", b.Token,
		jsonBody{"capability": "fs:write", "target": "/tmp/x"}).request(t)
	if r.TokenID != b.ID {
		t.Fatalf("request on replica two: token %q", r.TokenID)
	}
	one.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+a.ID, tokA1, nil)
	for _, tok := range []string{a.Token, b.Token} {
		if st := two.do(t, "GET", "/v1/capabilities", tok, nil).Status; st != http.StatusUnauthorized {
			t.Errorf("replica two after the revoke on replica one: %d, want 401", st)
		}
	}
}

// TestAPI_Tokens_SameRateBucket: a child shares its root agent's rate
// bucket, so sub-agents cannot multiply an agent's rate; an admin agent
// may revoke any agent's token.
func TestAPI_Tokens_SameRateBucket(t *testing.T) {
	g := startE2E(t, e2eOptions{})
	child := makeToken(t, g, tokLimited, jsonBody{"ttl": "1h"}) // lim: 2 a minute per capability
	g.want(t, http.StatusOK, "POST", "/v1/requests", tokLimited, jsonBody{"capability": "llm:local"})
	g.want(t, http.StatusOK, "POST", "/v1/requests", child.Token, jsonBody{"capability": "llm:local"})
	for _, tok := range []string{child.Token, tokLimited} {
		if r := g.do(t, "POST", "/v1/requests", tok, jsonBody{"capability": "llm:local"}); r.Status != http.StatusTooManyRequests {
			t.Errorf("third request in the minute: %d, want 429", r.Status)
		}
	}
	g.want(t, http.StatusOK, "DELETE", "/v1/tokens/"+child.ID, tokAdmin, nil)
	g.want(t, http.StatusUnauthorized, "GET", "/v1/capabilities", child.Token, nil)
}
