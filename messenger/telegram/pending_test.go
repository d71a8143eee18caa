package telegram_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
)

// TestTelegram_PendingOnlyThisChatsCards: /pending posts again the cards
// of the requests whose card goes to Telegram, never one a route sends
// elsewhere (here the web page only): no agent's request reaches a chat
// its route keeps it from.
func TestTelegram_PendingOnlyThisChatsCards(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.cfg.Approvals.Routes = []config.Route{{Capability: "network:http", Notify: []string{config.NotifyWeb}}}
	})
	ours := h.pending("fs:write", "/tmp/ours")
	h.card(ours.ID)
	web := h.pending("network:http", "https://elsewhere.example.com/x")
	id := h.fake.Say(roberto, chatID, "/pending", 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Sending 1 pending card(s) again") {
		t.Errorf("/pending answered %q", got)
	}
	h.fake.WaitUntil(t, waitLong, "the card sent again", func() bool {
		n := 0
		for _, m := range h.fake.Messages(chatID) {
			if m.From == nil && strings.Contains(m.Text, ours.ID) {
				n++
			}
		}
		return n == 2
	})
	for _, m := range h.fake.Messages(chatID) {
		if strings.Contains(m.Text, web.ID) || strings.Contains(m.Text, "elsewhere.example.com") {
			t.Errorf("a web-only request reached the chat: %q", m.Text)
		}
	}
}
