package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/slack/slacktest"
)

// TestDigest_TelegramSlack: the digest of [approvals] digest, triggered
// directly (the scheduler's own test runs a job on it), reaches the fake
// Telegram and the fake Slack as one message each: the day's asks,
// allows, denies and what still waits, the top suggestion with its target
// escaped, and the link to the web page's Suggestions under
// web.public_url. A Slack that fails does not keep Telegram's message
// back, and the error names Slack.
func TestDigest_TelegramSlack(t *testing.T) {
	g := newChatGW(t, func(cfg *config.Config) {
		cfg.Approvals.Digest = "0 18 * * *"
		cfg.Web.PublicURL = "https://gw.example.org/"
	})
	ctx := context.Background()
	decide := func(target, decision string) {
		st, b := g.call("POST", "/v1/requests", rtAgentToken, map[string]any{
			"capability": "fs:write", "target": target, "intent": "write the report", "call_id": target})
		var r approvals.Request
		if err := json.Unmarshal(b, &r); err != nil || st >= 300 || r.Status != approvals.StatusPending {
			t.Fatalf("ask %s: %d %s", target, st, b)
		}
		if decision == "" {
			return
		}
		if st, b := g.call("POST", "/v1/requests/"+r.ID+"/decision", rtAdminToken,
			map[string]any{"decision": decision}); st != 200 {
			t.Fatalf("decide %s: %d %s", target, st, b)
		}
	}
	for _, f := range []string{"a", "b", "c"} {
		decide("/srv/<b>rep</b>/"+f+".csv", "allow_once")
	}
	decide("/srv/other/z.txt", "deny")
	decide("/srv/other/w.txt", "")

	if err := g.app.SendDigest(ctx); err != nil {
		t.Fatal(err)
	}
	const link = "https://gw.example.org/#suggestions"
	var tg []string
	for _, m := range g.tg.BotMessages() {
		if strings.Contains(m.Text, "Approvals digest") {
			tg = append(tg, m.HTML)
			if !strings.Contains(m.Text, "Asked: 5 · allowed 3 · denied 1 · expired 0 · still pending 1") ||
				!strings.Contains(m.Text, "a1 · fs:write /srv/<b>rep</b>/*.csv · allowed 3 times") ||
				!strings.Contains(m.Text, link) {
				t.Errorf("telegram digest:\n%s", m.Text)
			}
		}
	}
	if len(tg) != 1 || !strings.Contains(tg[0], "<code>/srv/&lt;b&gt;rep&lt;/b&gt;/*.csv</code>") {
		t.Fatalf("telegram digests (HTML): %q", tg)
	}
	sl := slackDigests(g)
	if len(sl) != 1 {
		t.Fatalf("%d slack digests, want 1", len(sl))
	}
	if text := sl[0].Text(); !strings.Contains(text, "Asked: 5 · allowed 3 · denied 1") ||
		!strings.Contains(text, "/srv/&lt;b&gt;rep&lt;/b&gt;/*.csv · allowed 3 times") || !strings.Contains(text, link) {
		t.Errorf("slack digest:\n%s", text)
	}

	// a1's requests notify the web page only: no card takes this failure.
	g.sl.Fail("chat.postMessage", slacktest.Failure{Error: "channel_not_found"})
	err := g.app.SendDigest(ctx)
	if err == nil || !strings.Contains(err.Error(), "digest on slack") {
		t.Errorf("a failing Slack: %v", err)
	}
	n := 0
	for _, m := range g.tg.BotMessages() {
		if strings.Contains(m.Text, "Approvals digest") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d telegram digests after the second, want 2", n)
	}
}

// slackDigests are the digests posted on the fake Slack.
func slackDigests(g *routesGW) []slacktest.Call {
	var out []slacktest.Call
	for _, c := range g.sl.History() {
		if c.Method == "chat.postMessage" && c.Error == "" && strings.Contains(c.Text(), "Approvals digest") {
			out = append(out, c)
		}
	}
	return out
}
