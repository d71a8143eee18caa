package discord_test

import (
	"context"
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/policy"
)

// TestDiscord_EveryAgentScope: the scope buttons of Allow always grant
// the request's agent; their "For every agent of this principal…" button
// shows the same scopes for every agent, and a tap there writes a grant
// for every agent of the principal.
func TestDiscord_EveryAgentScope(t *testing.T) {
	h := newHarness(t)
	res := h.submit(fsWrite("/srv/reports/2026/q3.txt"), "30s")
	id, card := h.cardN(1)
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: customID(t, card, "v1:m:")})
	h.fake.Await(t, waitFor, "the scope buttons", func(s *discordtest.Server) bool {
		menu, _ := s.MessageLocked(card.ID)
		return strings.Join(menu.Buttons(), " ") != "" && strings.Contains(strings.Join(menu.Buttons(), " "), cards.EncodeEveryMenu(id))
	})
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeEveryMenu(id)})
	h.fake.Await(t, waitFor, "the every-agent scope buttons", func(s *discordtest.Server) bool {
		menu, _ := s.MessageLocked(card.ID)
		return strings.HasPrefix(menu.Buttons()[0], "v1:e0:")
	})
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeEveryScope(id, 0)})
	got := waitAgent(t, res)
	if got.req.Status != approvals.StatusAllowed || got.req.GrantID == nil {
		t.Fatalf("status %s grant %v", got.req.Status, got.req.GrantID)
	}
	gs, err := h.app.Service.Grants().List(context.Background(), policy.GrantFilter{})
	if err != nil || len(gs) != 1 || gs[0].Agent != "" {
		t.Fatalf("grants %+v (%v); want one for every agent", gs, err)
	}
}
