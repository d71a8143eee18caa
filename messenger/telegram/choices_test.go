package telegram_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
)

// allowFor2s is approvals.allow_for = ["2s"].
func allowFor2s(h *harness) {
	h.cfg.Approvals.AllowFor = []config.Duration{config.Duration(2 * time.Second)}
}

// TestTelegram_ForgedScopeRefused: a scope button that was never on the
// card, another request's button tapped on this card, and a scope past the
// request's list are refused with an alert and decide nothing; Back closes
// the scope keyboard.
func TestTelegram_ForgedScopeRefused(t *testing.T) {
	h := newHarness(t)
	r := h.pending("fs:write", "/home/roberto/notes/a.md")
	other := h.pending("fs:write", "/home/roberto/notes/b.md")
	card := h.card(r.ID)
	h.card(other.ID)

	for _, data := range []string{
		cards.EncodeScope(r.ID, 7),                          // never on any card of r
		cards.EncodeScope(other.ID, 0),                      // another request's scope, on r's card
		cards.EncodeDecision(other.ID, approvals.AllowOnce), // another request's button
		cards.EncodeAllowFor(r.ID, 8*time.Hour),             // a while not offered
		cards.EncodeScope(r.ID, 0),                          // a real scope, but the scope keyboard is closed
		cards.EncodeDecision(r.ID, approvals.AllowSession),  // no session on this request
	} {
		q := h.fake.Press(roberto, chatID, card.ID, data)
		if a := h.answerOf(q); !a.ShowAlert || !strings.Contains(a.Text, "not valid") {
			t.Errorf("%s answered %+v, want the refusal alert", data, a)
		}
	}
	for _, id := range []string{r.ID, other.ID} {
		if got := h.get(id); got.Status != approvals.StatusPending || got.GrantID != nil {
			t.Fatalf("a refused tap changed %s: %s", id, got.Status)
		}
	}

	h.fake.PressButton(t, roberto, chatID, card.ID, "Allow always")
	scopes := h.keyboardShows(card, "← Back")
	// The scope keyboard is open: a forged index past the list is still refused.
	q := h.fake.Press(roberto, chatID, card.ID, cards.EncodeScope(r.ID, 5))
	if a := h.answerOf(q); !a.ShowAlert {
		t.Errorf("a scope past the list answered %+v", a)
	}
	h.fake.PressButton(t, roberto, chatID, scopes.ID, "← Back")
	back := h.keyboardShows(card, cards.LabelAllowOnce)
	if got := buttonLabels(back); !slices.Contains(got, cards.LabelAllowAlways) || slices.Contains(got, "← Back") {
		t.Fatalf("Back shows %q", got)
	}
	if got := h.get(r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("opening and closing the scopes decided: %s", got.Status)
	}
	if n := h.countRows(`SELECT COUNT(*) FROM grants`); n != 0 {
		t.Fatalf("%d grants written by refused taps", n)
	}
}

// TestTelegram_AllowFor: "Allow for 2 s" writes a grant on the default
// scope that answers the same request at once, and ends 2 s after the tap
// (the clock is moved, not waited for).
func TestTelegram_AllowFor(t *testing.T) {
	h := newHarness(t, allowFor2s)
	r := h.pending("fs:read", "/srv/logs/app.log")
	card := h.card(r.ID)
	q := h.fake.PressButton(t, roberto, chatID, card.ID, "Allow for 2 s")
	if a := h.answerOf(q); a.ShowAlert || !strings.Contains(a.Text, "Allowed for 2 s") {
		t.Fatalf("tap answered %+v", a)
	}
	got := h.get(r.ID)
	if got.Decision == nil || *got.Decision != approvals.AllowFor || got.GrantID == nil {
		t.Fatalf("request %+v", got)
	}
	g, err := h.app.Grants.Get(context.Background(), *got.GrantID)
	if err != nil || g.Target != "/srv/logs/app.log" || g.ExpiresAt == nil || g.ExpiresAt.Sub(g.GrantedAt) != 2*time.Second {
		t.Fatalf("grant %+v, %v", g, err)
	}
	h.cardShows(card, "⏱ Allowed for 2 s by Roberto")
	if code, again := h.ask("fs:read", "/srv/logs/app.log", "0s"); code != http.StatusOK || again.Status != approvals.StatusAllowed {
		t.Fatalf("within the while: %d %s", code, again.Status)
	}
	h.clock.Advance(2 * time.Second)
	if code, later := h.ask("fs:read", "/srv/logs/app.log", "0s"); code != http.StatusAccepted || later.Status != approvals.StatusPending {
		t.Fatalf("after the while: %d %s, want asked again", code, later.Status)
	}
}

// TestTelegram_AllowSession: a request naming its session gets "Allow this
// session"; the grant answers the same session at once and a second
// session is asked again; /grants names the grant's agent and session.
func TestTelegram_AllowSession(t *testing.T) {
	h := newHarness(t)
	ask := func(session string) (int, approvals.Request) {
		return h.do("POST", "/v1/requests?wait=0s", agentToken, map[string]any{
			"capability": "network:http", "target": "https://api.example.com/v1", "session_id": session,
			"intent": "fetch", "executor": "fetcher"})
	}
	_, r := ask("s-1")
	card := h.card(r.ID)
	q := h.fake.PressButton(t, roberto, chatID, card.ID, "Allow this session")
	if a := h.answerOf(q); a.ShowAlert || !strings.Contains(a.Text, "this session") {
		t.Fatalf("tap answered %+v", a)
	}
	got := h.get(r.ID)
	g, err := h.app.Grants.Get(context.Background(), *got.GrantID)
	if err != nil || g.Agent != "a1" || g.SessionID != "s-1" || g.Target != "api.example.com" {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if code, same := ask("s-1"); code != http.StatusOK || same.Status != approvals.StatusAllowed {
		t.Fatalf("same session: %d %s", code, same.Status)
	}
	if code, second := ask("s-2"); code != http.StatusAccepted || second.Status != approvals.StatusPending {
		t.Fatalf("second session: %d %s, want asked again", code, second.Status)
	}
	list := h.replyTo(roberto.ID, h.fake.Say(roberto, roberto.ID, "/grants", 0))
	if !strings.Contains(list, "api.example.com") || !strings.Contains(list, "only agent a1, session s-1") {
		t.Errorf("/grants does not name the session grant's agent and session:\n%s", list)
	}
}

// TestTelegram_NoWhileOrSessionForAlwaysCapabilities (seed 000): code:exec
// and mail:send cards have no Allow for, no Allow this session and no
// Allow always; forged taps of them decide nothing and write no grant.
func TestTelegram_NoWhileOrSessionForAlwaysCapabilities(t *testing.T) {
	h := newHarness(t, allowFor2s)
	for _, c := range []struct{ capability, target string }{{"code:exec", "npm test"}, {"mail:send", "boss@example.com"}} {
		_, r := h.do("POST", "/v1/requests?wait=0s", agentToken, map[string]any{
			"capability": c.capability, "target": c.target, "session_id": "s-1", "intent": "x", "executor": "x"})
		card := h.card(r.ID)
		if got := buttonLabels(card); !slices.Equal(got, []string{cards.LabelAllowOnce, cards.LabelDeny}) {
			t.Errorf("%s buttons %q, want Allow once and Deny only", c.capability, got)
		}
		for _, data := range []string{cards.EncodeAllowFor(r.ID, 2*time.Second),
			cards.EncodeDecision(r.ID, approvals.AllowSession), cards.EncodeScope(r.ID, 0)} {
			if a := h.answerOf(h.fake.Press(roberto, chatID, card.ID, data)); !a.ShowAlert {
				t.Errorf("%s: forged %s answered %+v", c.capability, data, a)
			}
		}
		for _, d := range []string{"allow_for", "allow_session", "allow_always"} {
			if code, _ := h.do("POST", "/v1/requests/"+r.ID+"/decision", adminToken, map[string]any{"decision": d}); code != http.StatusBadRequest {
				t.Errorf("%s: API %s answered %d, want 400", c.capability, d, code)
			}
		}
		if got := h.get(r.ID); got.Status != approvals.StatusPending {
			t.Errorf("%s: forged taps decided: %s", c.capability, got.Status)
		}
	}
	if n := h.countRows(`SELECT COUNT(*) FROM grants`); n != 0 {
		t.Fatalf("%d grants written for code:exec / mail:send", n)
	}
}
