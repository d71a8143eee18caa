package cards_test

import (
	"encoding/json"
	"strings"
	"testing"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger/telegram"
)

// TestCard_ChildTokenAgentLine: a request made with a child token names
// the token on the card's Agent line, on every platform.
func TestCard_ChildTokenAgentLine(t *testing.T) {
	r := pending("fs:write", "/srv/app/main.go")
	r.TokenID, r.TokenName = "tabc", "refactor-bot"
	c := cards.New(r, tgLocale)
	want := r.Agent + " › refactor-bot"
	if c.Agent != want {
		t.Fatalf("Agent = %q, want %q", c.Agent, want)
	}
	if tg := telegram.Telegram(c); !strings.Contains(tg.HTML, want) {
		t.Errorf("Telegram card lacks %q:\n%s", want, tg.HTML)
	}
	blocks, _ := json.Marshal(slackcards.Slack(c).Blocks)
	if !strings.Contains(string(blocks), want) {
		t.Errorf("Slack card lacks %q:\n%s", want, blocks)
	}
	r.TokenName = "" // no name: the token id
	if c := cards.New(r, tgLocale); c.Agent != r.Agent+" › tabc" {
		t.Errorf("unnamed token: %q", c.Agent)
	}
}
