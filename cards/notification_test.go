package cards_test

import (
	"strings"
	"testing"
	"time"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger/telegram"
)

func TestNotification(t *testing.T) {
	at := time.Date(2026, 11, 26, 19, 4, 0, 0, time.UTC)
	l := locale.New(locale.English, time.UTC, func() time.Time { return at })
	r := approvals.Request{ID: "r1", Agent: "metnos", Capability: "code:exec", Reason: "approved by rule #1",
		Target: "git push origin main\u202e<b>&</b>" + strings.Repeat(" ", 400) + "; rm -rf ~", CreatedAt: at}
	n := cards.NewNotification(r, l)
	for _, s := range []string{n.Text(l), n.Render(l, telegram.TelegramMarkup), n.Render(l, slackcards.SlackMarkup)} {
		if strings.ContainsRune(s, '\u202e') || strings.Contains(s, strings.Repeat(" ", 17)) {
			t.Errorf("hidden text shown as is: %q", s)
		}
		if !strings.Contains(s, "rm -rf ~") || !strings.Contains(s, "⟦U+202E⟧") {
			t.Errorf("the target's tail or its escape is missing: %q", s)
		}
	}
	if want := "🔔 metnos ran code:exec git push origin main⟦U+202E⟧<b>&</b>⟦400 spaces⟧; rm -rf ~ · approved by rule #1 · 19:04 UTC"; n.Text(l) != want {
		t.Errorf("text\n%q, want\n%q", n.Text(l), want)
	}
	if h := n.Render(l, telegram.TelegramMarkup); !strings.Contains(h, "<code>git push origin main⟦U+202E⟧&lt;b&gt;&amp;&lt;/b&gt;") {
		t.Errorf("telegram HTML not escaped: %q", h)
	}
	if s := n.Render(l, slackcards.SlackMarkup); strings.Contains(s, "<b>") {
		t.Errorf("slack text not escaped: %q", s)
	}
	long := cards.NewNotification(approvals.Request{Agent: "a", Capability: "code:exec", Target: strings.Repeat("x", 5000)}, l)
	if c := len([]rune(long.Target)); c > cards.MaxNotificationTarget {
		t.Errorf("target of %d characters, want at most %d", c, cards.MaxNotificationTarget)
	}
}
