package telegram_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/telegram"
)

// TestTelegram_History: /history gives approvers (nobody else) the last
// rows of the audit trail: all of it, one request's, or one agent's.
func TestTelegram_History(t *testing.T) {
	h := newHarness(t)
	h.fake.WaitUntil(t, waitLong, "commands registered", func() bool { return len(h.fake.Commands()) > 0 })
	if !slices.ContainsFunc(h.fake.Commands(), func(c tgbotapi.BotCommand) bool { return c.Command == "history" }) {
		t.Error("/history is not in the command menu")
	}
	r := h.pending("fs:write", "/tmp/history.txt")
	if _, err := h.app.Service.Decide(context.Background(), r.ID, approvals.AllowOnce,
		approvals.Actor{Channel: "telegram", ID: "42", Name: "Roberto"}); err != nil {
		t.Fatal(err)
	}
	ask := func(who tgbotapi.User, text string) string {
		t.Helper()
		id := h.fake.Say(who, who.ID, text, 0)
		return h.replyTo(who.ID, id)
	}
	all := ask(roberto, "/history")
	for _, w := range []string{"The last ", "audit rows for everything (oldest first)", "outcome by agent:a1",
		"decision by telegram:Roberto (42)", "request " + r.ID, "decision allow_once"} {
		if !strings.Contains(all, w) {
			t.Errorf("/history = %q; want %q", all, w)
		}
	}
	if got := ask(roberto, "/history "+r.ID); !strings.Contains(got, "The last 2 audit rows for request "+r.ID) {
		t.Errorf("/history ID = %q", got)
	}
	if got := ask(roberto, "/history a1"); !strings.Contains(got, "for agent a1") {
		t.Errorf("/history a1 = %q", got)
	}
	id := h.fake.Say(mallory, chatID, "/history", 0) // a stranger's private chat gets no answer at all
	if got := h.replyTo(chatID, id); !strings.Contains(got, telegram.NotApprover) || strings.Contains(got, r.ID) {
		t.Errorf("/history for a stranger = %q", got)
	}
	if got := ask(mallory, "/help"); !strings.Contains(got, "/history") {
		t.Errorf("/help = %q", got)
	}
}
