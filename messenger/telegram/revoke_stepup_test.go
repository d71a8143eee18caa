package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/policy"
)

// TestTelegram_RevokeHeldToPolicyStepUp: while [web] policy_step_up =
// "passkey" every grant change is an admin's passkey assertion on the web
// page, so neither /revoke nor a Revoke button of /grants revokes from
// the chat: the approver is told where to do it, and the grant stays.
func TestTelegram_RevokeHeldToPolicyStepUp(t *testing.T) {
	h := newHarness(t, func(h *harness) { h.cfg.Web.PolicyStepUp = "passkey" })
	ctx := context.Background()
	g, err := h.app.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:read", Target: "/home/roberto/inv/*", GrantedBy: "cli", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := h.fake.Say(roberto, chatID, "/revoke "+itoa(g.ID), 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "policy_step_up") || !strings.Contains(got, "web page") {
		t.Errorf("/revoke answered %q", got)
	}
	id = h.fake.Say(roberto, roberto.ID, "/grants", 0)
	var list telegramtest.Message
	h.fake.WaitUntil(t, waitLong, "the grants list", func() bool {
		for _, m := range h.fake.Messages(roberto.ID) {
			if m.ReplyTo == id {
				list = m
				return true
			}
		}
		return false
	})
	q := h.fake.PressButton(t, roberto, roberto.ID, list.ID, "Revoke #"+itoa(g.ID))
	if a := h.answerOf(q); !strings.Contains(a.Text, "policy_step_up") {
		t.Errorf("Revoke answered %+v", a)
	}
	if cur, _ := h.app.Grants.Get(ctx, g.ID); !cur.Active {
		t.Errorf("a chat revoked a grant while policy_step_up is on: %+v", cur)
	}
}
