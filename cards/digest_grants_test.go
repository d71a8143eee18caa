package cards_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/discord"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/telegram"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// TestDigest_NamesTheGrants: the digest names the grants to review, each
// with its id, capability, target and agent shown as cards show agent
// strings (escaped for Telegram's HTML and Slack, in code spans on
// Discord, a hidden character as an escape), with when it expires or was
// last used, and how many more the page lists.
func TestDigest_NamesTheGrants(t *testing.T) {
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	exp, used := at.Add(3*24*time.Hour), at.Add(-40*24*time.Hour)
	d := approvals.Digest{From: at.Add(-24 * time.Hour), To: at,
		GrantsExpiring: []approvals.DigestGrant{{ID: 7, Agent: "bot<i>\u202e", Capability: "fs:write",
			Target: "/srv/<b>x</b>/*", ExpiresAt: &exp}},
		GrantsUnused: []approvals.DigestGrant{{ID: 9, Capability: "network:http", Target: "https://a.example/@everyone",
			LastUsedAt: &used}},
		MoreUnused: 2}
	l := locale.New(locale.English, time.UTC, func() time.Time { return at })
	m := cards.NewDigest(d, l)
	text := m.Text(l)
	for _, want := range []string{"Grants: 1 expire within 7 days, 3 unused for 30 days", "#7 fs:write /srv/<b>x</b>/*",
		"only agent bot<i>⟦U+202E⟧", "until", "#9 network:http https://a.example/@everyone · last used", "… and 2 more"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if h := m.Render(l, telegram.TelegramMarkup); !strings.Contains(h, "<code>/srv/&lt;b&gt;x&lt;/b&gt;/*</code>") ||
		!strings.Contains(h, "<code>bot&lt;i&gt;⟦U+202E⟧</code>") || strings.ContainsRune(h, '\u202e') {
		t.Errorf("telegram HTML:\n%s", h)
	}
	if s := m.Render(l, slack.SlackMarkup); strings.Contains(s, "<b>") || strings.Contains(s, "bot<i>") {
		t.Errorf("slack text not escaped:\n%s", s)
	}
	if s := discord.DiscordText(m.Render(l, discord.DiscordMarkup)); !strings.Contains(s, "`/srv/<b>x</b>/*`") || !strings.Contains(s, "`https://a.example/@everyone`") {
		t.Errorf("discord text:\n%s", s)
	}
}
