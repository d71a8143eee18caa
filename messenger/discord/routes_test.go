package discord_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// A quorum of one Telegram and one Discord approver: the Discord tap is
// counted (the card shows the progress), the Telegram tap completes it,
// and both cards end with the outcome.
func TestDiscord_QuorumWithTelegram(t *testing.T) {
	modes(t, func(t *testing.T, opts ...harnessOption) {
		h := newHarness(t, append(opts, withTelegram, withRoutes(config.Route{Capability: "fs:write", Quorum: 2,
			Notify:    []string{"telegram", "discord"},
			Approvers: []string{"telegram:42", "discord:" + approverID}}))...)
		res := h.submit(fsWrite("/srv/quorum.txt"), "30s")
		id, card := h.cardN(1)
		var tgCard telegramtest.Message
		h.tg.WaitUntil(t, waitFor, "the Telegram card", func() bool {
			for _, m := range h.tg.Messages(tgChat) {
				if m.Keyboard != nil && strings.Contains(m.Text, id) {
					tgCard = m
					return true
				}
			}
			return false
		})
		h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
		h.ephemeralWith("Counted")
		if r := h.get(id); r.Status != approvals.StatusPending || len(r.Approvals) != 1 {
			t.Fatalf("after one of two: %s, %d approvals", r.Status, len(r.Approvals))
		}
		h.fake.Await(t, waitFor, "the progress on the Discord card", func(s *discordtest.Server) bool {
			m, _ := s.MessageLocked(card.ID)
			return m.Edits > 0 && strings.Contains(m.Content, "1") && len(m.Buttons()) > 0
		})
		h.tg.Press(tgRoberto, tgChat, tgCard.ID, cards.EncodeDecision(id, approvals.AllowOnce))
		got := waitAgent(t, res)
		if got.req.Status != approvals.StatusAllowed || len(got.req.Approvals) != 2 {
			t.Fatalf("status %s, %d approvals", got.req.Status, len(got.req.Approvals))
		}
		h.fake.Await(t, waitFor, "the finished Discord card", func(s *discordtest.Server) bool {
			m, _ := s.MessageLocked(card.ID)
			return len(m.Buttons()) == 0 && strings.Contains(m.Content, "Allowed")
		})
	})
}

// A route naming a Discord role: a member without it is refused, one with
// it decides though not in discord.approvers; the role is read from the
// signed interaction's member.roles.
func TestDiscord_RouteRole(t *testing.T) {
	const role = "1100000000000000555"
	h := newHarness(t, httpMode, withRoutes(config.Route{Capability: "fs:write", Quorum: 1,
		Approvers: []string{"discord:role:" + role}}))
	res := h.submit(fsWrite("/srv/role.txt"), "30s")
	id, card := h.cardN(1)
	allow := cards.EncodeDecision(id, approvals.AllowOnce)
	h.tap(discordtest.Interaction{UserID: strangerID, Roles: []string{"1100000000000000556"}, MessageID: card.ID, CustomID: allow})
	h.ephemeralWith("approver")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("a member without the role decided: %s", r.Status)
	}
	// The approver of discord.approvers is not named by the route either.
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: allow})
	h.ephemeralWith("its route names them")
	h.tap(discordtest.Interaction{UserID: strangerID, Roles: []string{role}, MessageID: card.ID, CustomID: allow})
	if got := waitAgent(t, res); got.req.Status != approvals.StatusAllowed || !strings.Contains(got.req.DecidedBy, strangerID) {
		t.Fatalf("status %s by %q", got.req.Status, got.req.DecidedBy)
	}
}

// A step-up route: the card offers Confirm on the web page (a link
// button to the request's page) and Deny, no allow button; an Allow tap
// forged on it decides nothing and says where to allow; Deny still works.
func TestDiscord_StepUpCard(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.cfg.Web.PublicURL = "https://gw.example.com"
		h.cfg.Approvals.Routes = []config.Route{{Capability: "fs:write", Quorum: 1, StepUp: config.StepUpPasskey,
			Approvers: []string{"discord:" + approverID, "web:owner"}}}
	})
	res := h.submit(fsWrite("/srv/stepup.txt"), "30s")
	id, card := h.cardN(1)
	if links := card.Links(); len(links) != 1 || links[0] != "https://gw.example.com/r/"+id {
		t.Errorf("links %v; want the request's page", links)
	}
	if b := card.Buttons(); len(b) != 1 || b[0] != cards.EncodeDecision(id, approvals.Deny) {
		t.Errorf("buttons %v; want Deny only", b)
	}
	if !strings.Contains(card.Content, "passkey") {
		t.Errorf("the card does not say why:\n%s", card.Content)
	}
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.AllowOnce)})
	h.ephemeralWith("passkey")
	if r := h.get(id); r.Status != approvals.StatusPending {
		t.Fatalf("a forged Allow on a step-up card decided: %s", r.Status)
	}
	h.tap(discordtest.Interaction{UserID: approverID, MessageID: card.ID, CustomID: cards.EncodeDecision(id, approvals.Deny)})
	if got := waitAgent(t, res); got.req.Status != approvals.StatusDenied {
		t.Fatalf("status %s", got.req.Status)
	}
}
