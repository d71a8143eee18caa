package cards_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/policy"
)

// TestStepUpCards: a pending request whose route asks for a passkey has
// no allow button on Telegram or Slack, keeps Deny, and links to its web
// page: a URL / link button when the link base is a public name, the
// address as text when it is localhost or an IP address (which the Bot
// API refuses as a button). A finished one has no buttons.
func TestStepUpCards(t *testing.T) {
	r := approvals.Request{ID: "r1", Agent: "a1", Capability: "fs:write", Target: "/srv/x", GrantTarget: "/srv/x",
		Autonomy: policy.Supervised, Status: approvals.StatusPending, CreatedAt: created,
		ExpiresAt: created.Add(10 * time.Minute), StepUp: approvals.StepUpPasskey, Scopes: []string{"/srv/x", "/srv/*"},
		AllowFor: []string{"1h"}}
	for _, tc := range []struct {
		base   string
		button bool
	}{
		{"https://gw.example.com", true},
		{"http://gw.example.com:8080/", true},
		{"http://localhost:8080", false},
		{"http://127.0.0.1:8080", false},
		{"", false},
	} {
		c := cards.New(r, tgLocale).WithConfirm(tc.base)
		link := strings.TrimRight(tc.base, "/") + "/r/r1"
		tg := telegram.Telegram(c)
		var labels []string
		url := ""
		for _, row := range tg.Keyboard.InlineKeyboard {
			for _, b := range row {
				labels = append(labels, b.Text)
				if b.URL != nil {
					url = *b.URL
				}
			}
		}
		joined := strings.Join(labels, "|")
		if strings.Contains(joined, "Allow") || !strings.Contains(joined, "Deny") {
			t.Errorf("%s: telegram buttons %q", tc.base, joined)
		}
		if tc.button != (url == link && strings.Contains(joined, "Confirm on the web page")) {
			t.Errorf("%s: telegram URL button %q (%q), want one: %v", tc.base, url, joined, tc.button)
		}
		if !strings.Contains(tg.Plain, "passkey") || tc.button == strings.Contains(tg.Plain, link) {
			t.Errorf("%s: telegram text %q: the link as text only without a button", tc.base, tg.Plain)
		}
		sl := slackcards.Slack(c)
		blocks, _ := json.Marshal(sl.Blocks)
		s := string(blocks)
		if strings.Contains(s, slackcards.SlackActionAllowOnce) || strings.Contains(s, slackcards.SlackActionAllowAlways) ||
			!strings.Contains(s, slackcards.SlackActionDeny) || !strings.Contains(s, "passkey") {
			t.Errorf("%s: slack blocks %s", tc.base, s)
		}
		if tc.button != strings.Contains(s, `"url":"`+link+`"`) {
			t.Errorf("%s: slack link button %v in %s", tc.base, tc.button, s)
		}
	}
	r.Status = approvals.StatusDenied
	if kb := telegram.TelegramKeyboard(cards.New(r, tgLocale).WithConfirm("https://gw.example.com")); kb != nil {
		t.Errorf("a finished step-up card has a keyboard: %+v", kb)
	}
}
