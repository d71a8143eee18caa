package telegram_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// TestTelegram_StepUpLink: a step-up card links to the request's page
// under web.public_url with a URL button and has no Allow; when the Bot
// API refuses that URL as a button, the card is sent with the link as
// text instead (and still no Allow).
func TestTelegram_StepUpLink(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.cfg.Web.PublicURL = "https://gw.example.com"
		h.cfg.Approvals.Routes = []config.Route{{Capability: "fs:write", Quorum: 1, StepUp: config.StepUpPasskey}}
	})
	urlButton := func(m telegramtest.Message) string {
		for _, b := range m.Buttons() {
			if strings.Contains(b.Text, "Allow") {
				t.Errorf("a step-up card has %q", b.Text)
			}
			if b.URL != nil {
				return *b.URL
			}
		}
		return ""
	}
	r := h.pending("fs:write", "/srv/one.txt")
	m := h.card(r.ID)
	if got, want := urlButton(m), "https://gw.example.com/r/"+r.ID; got != want {
		t.Errorf("URL button %q, want %q", got, want)
	}
	h.fake.Inject("sendMessage", telegramtest.Fault{Status: http.StatusBadRequest, Description: "Bad Request: BUTTON_URL_INVALID", Times: 1})
	r = h.pending("fs:write", "/srv/two.txt")
	m = h.card(r.ID)
	if got := urlButton(m); got != "" {
		t.Errorf("URL button %q after the Bot API refused it", got)
	}
	if !strings.Contains(m.Text, "https://gw.example.com/r/"+r.ID) {
		t.Errorf("the card does not show the link as text:\n%s", m.Text)
	}
}
