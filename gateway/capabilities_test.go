package gateway_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
)

func capabilityList(tb testing.TB, g *e2eGateway, tok, query string) map[string]policy.CapabilityOutcome {
	tb.Helper()
	var out struct {
		Capabilities []policy.CapabilityOutcome `json:"capabilities"`
	}
	if err := json.Unmarshal(g.want(tb, http.StatusOK, "GET", "/v1/capabilities"+query, tok, nil).Body, &out); err != nil {
		tb.Fatal(err)
	}
	m := map[string]policy.CapabilityOutcome{}
	for _, c := range out.Capabilities {
		m[c.Name] = c
	}
	return m
}

func TestAPI_Capabilities(t *testing.T) {
	g := startE2E(t, e2eOptions{mutate: func(cfg *config.Config) {
		cfg.Agents[2].Autonomy = policy.ReadOnly // a2
		cfg.Agents[2].DenyCapabilities = []string{"mail:read"}
	}})
	g.want(t, http.StatusUnauthorized, "GET", "/v1/capabilities", "", nil)
	g.want(t, http.StatusBadRequest, "GET", "/v1/capabilities?include_blocked=maybe", tokA2, nil)

	caps := capabilityList(t, g, tokA2, "")
	if len(caps) != 6 { // ReadOnly: fs:read, mail:read (denied by the profile), calendar:read ask; llm:local, channel:in, time:read, parse:local allowed
		t.Errorf("a2 sees %d capabilities: %v", len(caps), caps)
	}
	if c := caps["fs:read"]; c.Outcome != policy.ApprovalRequired || c.TargetKind != policy.KindPathGlob || c.Critical {
		t.Errorf("fs:read: %+v", c)
	}
	if _, ok := caps["mail:read"]; ok {
		t.Error("mail:read listed although the profile denies it")
	}
	all := capabilityList(t, g, tokA2, "?include_blocked=true")
	if len(all) != len(policy.Registry()) || all["mail:read"].Outcome != policy.Denied || all["fs:write"].Outcome != policy.Denied {
		t.Errorf("include_blocked: %v", all)
	}

	// A capability-wide block added at run time hides the capability at once.
	if c := capabilityList(t, g, tokA1, "")["llm:local"]; c.Outcome != policy.Allowed {
		t.Fatalf("a1 llm:local: %+v", c)
	}
	g.want(t, http.StatusCreated, "POST", "/v1/policy/rules", tokAdmin,
		jsonBody{"capability": "llm:*", "target": "*", "action": "block", "agent": "a1"})
	if _, ok := capabilityList(t, g, tokA1, "")["llm:local"]; ok {
		t.Error("a1 still lists llm:local after a capability-wide block")
	}
	if c := capabilityList(t, g, tokA1, "?include_blocked=true")["llm:online"]; c.Outcome != policy.Denied {
		t.Errorf("a1 llm:online with include_blocked: %+v", c)
	}
	if c := capabilityList(t, g, tokA2, "")["llm:local"]; c.Outcome != policy.Allowed {
		t.Errorf("a2 is not a1: llm:local %+v", c)
	}
}
