package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/policy"
)

// TestDiscord_RevokeHeldToPolicyStepUp: while [web] policy_step_up =
// "passkey", /approvals revoke from a discord.admins user revokes nothing
// and says to do it on the web page, as the page holds every grant change
// to an admin's passkey.
func TestDiscord_RevokeHeldToPolicyStepUp(t *testing.T) {
	h := newHarness(t, func(h *harness) { h.cfg.Web.PolicyStepUp = "passkey" })
	ctx := context.Background()
	g, err := h.gw.App.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:read", Target: "/srv/inv/*", GrantedBy: "cli", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, token := h.fake.Tap(t, discordtest.Interaction{UserID: adminID, Command: "revoke", Options: map[string]any{"id": g.ID}})
	var text string
	h.fake.Await(t, waitFor, "/approvals revoke", func(s *discordtest.Server) bool {
		for _, c := range s.CallsLocked("original.edit") {
			if strings.Contains(c.Path, token) {
				text, _ = c.Payload()["content"].(string)
				return true
			}
		}
		return false
	})
	if !strings.Contains(text, "passkey") || !strings.Contains(text, "web page") {
		t.Errorf("revoke answered %q", text)
	}
	if cur, _ := h.gw.App.Grants.Get(ctx, g.ID); !cur.Active {
		t.Errorf("discord revoked a grant while policy_step_up is on: %+v", cur)
	}
}
