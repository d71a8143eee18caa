package cards_test

import (
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/messenger/discord"

	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/telegram"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
)

// TestBulletin: a bulletin's arguments (people's strings) come out of
// every messenger's rendering as inert text: Telegram's HTML escaped in a
// code entity, Slack's mrkdwn characters escaped, Discord's in a code span
// (no mention), bidi controls shown, never applied.
func TestBulletin(t *testing.T) {
	b := approvals.Bulletin{Key: "bulletin.passkey_removed",
		Args: []string{"<b>Eve</b>&`x` @everyone\u202e", "ow<ner>", "cli", "removed"}}
	l := locale.New(locale.English, time.UTC, time.Now)
	m := cards.NewBulletin(b, l)
	tg := m.Render(telegram.TelegramMarkup)
	if !strings.Contains(tg, "<code>&lt;b&gt;Eve&lt;/b&gt;&amp;`x` @everyone") || strings.Contains(tg, "\u202e") ||
		!strings.Contains(tg, "of web user <code>ow&lt;ner&gt;</code> was removed by <code>cli</code>") {
		t.Errorf("telegram:\n%s", tg)
	}
	sl := m.Render(slack.SlackMarkup)
	if strings.ContainsAny(strings.ReplaceAll(strings.ReplaceAll(sl, "&lt;", ""), "&gt;", ""), "<>") || strings.Contains(sl, "\u202e") {
		t.Errorf("slack:\n%s", sl)
	}
	dc := discord.DiscordText(m.Render(discord.DiscordMarkup))
	if !strings.Contains(dc, "`<b>Eve</b>&⟦U+0060⟧x⟦U+0060⟧ @everyone") || strings.Contains(dc, "\u202e") {
		t.Errorf("discord:\n%s", dc)
	}
	if !strings.HasPrefix(m.Text(), "🔑 Passkey <b>Eve</b>&`x` @everyone") {
		t.Errorf("text:\n%s", m.Text())
	}
}
