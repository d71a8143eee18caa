package telegram

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/cards"
)

// TestTelegramEveryKeyboard_NotOnGuardedRoutes: a guarded card's scope
// keyboard offers no "for every agent", and it has no such keyboard.
func TestTelegramEveryKeyboard_NotOnGuardedRoutes(t *testing.T) {
	c := cards.Card{RequestID: "rabc", Pending: true, AllowAlways: true, Scopes: []string{"/a/b", "/a/*"}, Guarded: true}
	for _, row := range TelegramScopeKeyboard(c).InlineKeyboard {
		for _, b := range row {
			if strings.HasPrefix(*b.CallbackData, "v1:e") {
				t.Errorf("a guarded card offers %q", *b.CallbackData)
			}
		}
	}
	if TelegramEveryKeyboard(c) != nil {
		t.Error("a guarded card has an every-agent keyboard")
	}
	c.Guarded = false
	if kb := TelegramEveryKeyboard(c); kb == nil || len(kb.InlineKeyboard) != 3 ||
		*kb.InlineKeyboard[1][0].CallbackData != cards.EncodeEveryScope("rabc", 1) {
		t.Errorf("every-agent keyboard: %+v", kb)
	}
}
