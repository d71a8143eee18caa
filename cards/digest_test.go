package cards_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/discord"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger/telegram"
)

// TestDigest: the digest's agent strings are shown as cards show them (a
// hidden character as an escape, a long target cut with its tail kept),
// escaped for Telegram's HTML and Slack; the counts and the link are
// there in each language; with no suggestion it says so and has no link.
func TestDigest(t *testing.T) {
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	d := approvals.Digest{From: at.Add(-24 * time.Hour), To: at, Link: "https://gw.example.org/#suggestions",
		DigestCounts: approvals.DigestCounts{Asked: 9, Allowed: 5, Denied: 2, Expired: 1, Pending: 1},
		Suggestions: []approvals.DigestSuggestion{{Agent: "a1\u202e", Capability: "code:exec",
			Target: "npm <b>test</b>" + strings.Repeat("x", 300) + "tail", Count: 4}}}
	for _, lang := range []locale.Lang{locale.English, locale.Italian} {
		l := locale.New(lang, time.UTC, func() time.Time { return at })
		m := cards.NewDigest(d, l)
		for _, s := range []string{m.Text(l), m.Render(l, telegram.TelegramMarkup), m.Render(l, slackcards.SlackMarkup)} {
			if strings.ContainsRune(s, '\u202e') || !strings.Contains(s, "⟦U+202E⟧") || !strings.Contains(s, "xtail") ||
				strings.Contains(s, strings.Repeat("x", 250)) || !strings.Contains(s, d.Link) || !strings.Contains(s, "9") {
				t.Errorf("%s digest:\n%s", lang, s)
			}
		}
		if h := m.Render(l, telegram.TelegramMarkup); !strings.Contains(h, "<code>npm &lt;b&gt;test&lt;/b&gt;") {
			t.Errorf("%s telegram HTML not escaped: %q", lang, h)
		}
		if s := m.Render(l, slackcards.SlackMarkup); !strings.Contains(s, "npm &lt;b&gt;test&lt;/b&gt;") {
			t.Errorf("%s slack text not escaped: %q", lang, s)
		}
		if s := discord.DiscordText(m.Render(l, discord.DiscordMarkup)); !strings.Contains(s, "`npm <b>test</b>") || !strings.Contains(s, "<"+d.Link+">") ||
			!strings.Contains(s, `a1⟦U\+202E⟧ · code\:exec`) || strings.ContainsRune(s, '\u202e') || !strings.Contains(s, "xtail`") {
			t.Errorf("%s discord text: %q", lang, s)
		}
	}
	l := locale.New(locale.English, time.UTC, func() time.Time { return at })
	d.Suggestions = nil
	if s := cards.NewDigest(d, l).Text(l); !strings.Contains(s, "Asked: 9 · allowed 5 · denied 2 · expired 1 · still pending 1 · withdrawn 0") ||
		!strings.Contains(s, "No suggested rules.") || strings.Contains(s, d.Link) {
		t.Errorf("digest without suggestions:\n%s", s)
	}
}
