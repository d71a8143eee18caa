package cards_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/discord"

	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/telegram"

	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// TestGrantLines_NameTheAgent: the chats' grant lists (Telegram /grants,
// Slack's Home tab and /approvals grants, Discord's) name the agent of a
// grant that is one agent's only, as they name a session grant's, the
// agent's name escaped as every agent string is; a grant of the whole
// principal names none.
func TestGrantLines_NameTheAgent(t *testing.T) {
	l := locale.New(locale.English, time.UTC, time.Now)
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	one := policy.Grant{ID: 7, Channel: "telegram", SenderID: "42", Capability: "fs:write", Target: "/srv/*",
		Agent: "bot<i>", GrantedBy: "web:ada", GrantedAt: at}
	every := one
	every.ID, every.Agent = 8, ""
	tg := telegram.TelegramGrants([]policy.Grant{one, every}, false, l).HTML
	sl := slack.SlackGrantLine(one, l)
	dc := discord.DiscordGrantLine(one, l)
	for name, s := range map[string]string{"telegram": tg, "slack": sl, "discord": dc} {
		want := map[string]string{"telegram": "only agent bot&lt;i&gt;", "slack": "only agent `bot&lt;i&gt;`",
			"discord": "only agent `bot<i>`"}[name] // Discord draws nothing inside a code span
		if !strings.Contains(s, want) {
			t.Errorf("%s: the agent is not named as %q:\n%s", name, want, s)
		}
	}
	if strings.Count(tg, "only agent") != 1 {
		t.Errorf("telegram: a whole principal's grant names an agent:\n%s", tg)
	}
	if s := slack.SlackGrantLine(every, l) + discord.DiscordGrantLine(every, l); strings.Contains(s, "only agent") {
		t.Errorf("a whole principal's grant names an agent:\n%s", s)
	}
}
