package telegram_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
)

// TestTelegram_EveryAgentScope: Allow always grants the request's agent
// only, by default; "For every agent of this principal…" on the scope
// keyboard opens the same scopes for every agent, and only a tap there
// writes a grant for every agent. Its buttons count only while that
// keyboard is open.
func TestTelegram_EveryAgentScope(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	mine := h.pending("fs:write", "/home/roberto/notes/a.md")
	card := h.card(mine.ID)
	h.fake.PressButton(t, roberto, chatID, card.ID, cards.LabelAllowAlways)
	scopes := h.keyboardShows(card, "🌐 For every agent of this principal…")
	decided := func(id string) approvals.Request {
		t.Helper()
		var r approvals.Request
		h.fake.WaitUntil(t, waitLong, "the decision", func() bool { r = h.get(id); return r.Status != approvals.StatusPending })
		return r
	}
	h.fake.PressButton(t, roberto, chatID, scopes.ID, "♾ /home/roberto/notes/a.md")
	got := decided(mine.ID)
	if got.GrantID == nil {
		t.Fatalf("Allow always wrote no grant: %+v", got)
	}
	if g, err := h.app.Grants.Get(ctx, *got.GrantID); err != nil || g.Agent != "a1" {
		t.Fatalf("the default scope's grant is for %q (%v), want the request's agent a1", g.Agent, err)
	}

	every := h.pending("fs:write", "/home/roberto/work/b.md")
	card = h.card(every.ID)
	q := h.fake.Press(roberto, chatID, card.ID, cards.EncodeEveryScope(every.ID, 0))
	if a := h.answerOf(q); !a.ShowAlert {
		t.Errorf("an every-agent scope tapped while its keyboard is closed answered %+v", a)
	}
	h.fake.PressButton(t, roberto, chatID, card.ID, cards.LabelAllowAlways)
	scopes = h.keyboardShows(card, "🌐 For every agent of this principal…")
	h.fake.PressButton(t, roberto, chatID, scopes.ID, "🌐 For every agent of this principal…")
	everyKB := h.keyboardShows(card, "🌐 Every agent: /home/roberto/work/b.md")
	if labels := buttonLabels(everyKB); !slices.Contains(labels, "← Back") {
		t.Errorf("every-agent keyboard: %q", labels)
	}
	h.fake.PressButton(t, roberto, chatID, everyKB.ID, "🌐 Every agent: /home/roberto/work/b.md")
	got = decided(every.ID)
	if got.Status != approvals.StatusAllowed || got.GrantID == nil {
		t.Fatalf("every-agent tap: %+v", got)
	}
	if g, err := h.app.Grants.Get(ctx, *got.GrantID); err != nil || g.Agent != "" || !strings.HasSuffix(g.Target, "b.md") {
		t.Fatalf("the every-agent grant: %+v (%v), want no agent", g, err)
	}
}
