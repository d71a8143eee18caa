package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
)

// TestMode_Restrict: an agent in restrict mode whose cards would go to
// Telegram, Slack and the web page. What a person would be asked about is
// denied at once with the mode's reason; what an approve rule or a grant
// allows passes; no card appears anywhere; its capabilities say so.
func TestMode_Restrict(t *testing.T) {
	g := newChatGW(t, func(cfg *config.Config) {
		cfg.Agents[0].Mode = policy.ModeRestrict
		cfg.Agents[0].Notify = []string{"telegram", "slack", "web"}
		cfg.Agents[1].Notify = []string{"telegram"}
		cfg.Policy.Rules = []config.Rule{{Capability: "code:exec", Target: "git push origin main", Action: "approve"}, {Capability: "code:exec", Target: "git push origin ?", Action: "approve"}}
	})
	if st, b := g.call("POST", "/v1/grants", rtAdminToken, map[string]any{"channel": "web", "sender_id": "owner",
		"capability": "fs:read", "target": "/srv/reports/*"}); st != 201 && st != 200 {
		t.Fatalf("grant: %d %s", st, b)
	}
	ask := func(capability, target string) approvals.Request {
		t.Helper()
		// A long wait: the answer must come at once, not when it runs out.
		st, b := g.call("POST", "/v1/requests?wait=60s", rtAgentToken, map[string]any{
			"capability": capability, "target": target, "intent": "build", "call_id": target})
		var r approvals.Request
		if err := json.Unmarshal(b, &r); err != nil || st != 200 {
			t.Fatalf("%s %q: %d %s", capability, target, st, b)
		}
		return r
	}
	denied := ask("code:exec", "make deploy")
	if denied.Status != approvals.StatusDenied || denied.Reason != policy.RestrictReason ||
		denied.BlockedBy == nil || *denied.BlockedBy != policy.BlockedByPolicy || denied.Decision != nil {
		t.Fatalf("restrict: %+v", denied)
	}
	if last := denied.Trace[len(denied.Trace)-1]; last.Layer != "mode" || last.Outcome != policy.Denied {
		t.Errorf("last trace step %+v, want the mode's", last)
	}
	if r := ask("code:exec", "git push origin main"); r.Status != approvals.StatusAllowed {
		t.Errorf("approve rule: %s (%s)", r.Status, r.Reason)
	}
	if r := ask("fs:read", "/srv/reports/q3.pdf"); r.Status != approvals.StatusAllowed || r.GrantID == nil {
		t.Errorf("grant: %s (%s)", r.Status, r.Reason)
	}
	if r := ask("fs:read", "/srv/other/q3.pdf"); r.Status != approvals.StatusDenied || r.Reason != policy.RestrictReason {
		t.Errorf("outside the grant: %s (%s)", r.Status, r.Reason)
	}

	// No card: none was queued, and none reached a messenger by the time a
	// later card of another agent's request did.
	var cards int
	if err := g.app.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM cards`).Scan(&cards); err != nil || cards != 0 {
		t.Fatalf("cards queued: %d (%v)", cards, err)
	}
	if pend, _ := g.app.Service.ListPending(context.Background(), 10); len(pend) != 0 {
		t.Fatalf("pending requests: %+v", pend)
	}
	st, b := g.call("POST", "/v1/requests", rtAdminToken, map[string]any{"capability": "fs:write", "target": "/tmp/barrier"})
	var barrier approvals.Request
	if err := json.Unmarshal(b, &barrier); err != nil || st != 202 {
		t.Fatalf("barrier: %d %s", st, b)
	}
	g.tgCard(barrier.ID, nil)
	for _, m := range g.tg.BotMessages() {
		if strings.Contains(m.Text, "make deploy") || strings.Contains(m.Text, denied.ID) {
			t.Errorf("a card of the denied request: %q", m.Text)
		}
	}
	if n := g.sl.Count("chat.postMessage"); n != 0 {
		t.Errorf("%d Slack posts, want none", n)
	}

	// The capabilities say denied where a person would have been asked.
	st, b = g.call("GET", "/v1/capabilities?include_blocked=true", rtAgentToken, nil)
	var caps struct {
		Mode         policy.Mode                `json:"mode"`
		Capabilities []policy.CapabilityOutcome `json:"capabilities"`
	}
	if err := json.Unmarshal(b, &caps); err != nil || st != 200 || caps.Mode != policy.ModeRestrict {
		t.Fatalf("capabilities: %d %s", st, b)
	}
	for _, c := range caps.Capabilities {
		cp, _ := policy.Lookup(c.Name)
		want := policy.TableOutcome(policy.Supervised, cp)
		if want == policy.ApprovalRequired {
			want = policy.Denied
		}
		if c.Outcome != want {
			t.Errorf("capability %s: %s, want %s", c.Name, c.Outcome, want)
		}
	}
}
