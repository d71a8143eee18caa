package cards

import (
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
)

// WaitingSummary is the plain text of a messenger's message for requests
// held back by their agent's cards_per_minute: how many of each agent's
// wait, and the web page (page, when the gateway's public URL is known)
// where they are decided. Agent ids are shown as on the cards.
func WaitingSummary(waiting []approvals.Waiting, page string, l locale.Locale) string {
	var b strings.Builder
	for _, w := range waiting {
		b.WriteString(l.T("cards.more_waiting", w.N, Safe(w.Agent)))
		b.WriteByte('\n')
	}
	if page != "" {
		b.WriteString(l.T("cards.on_the_page", strings.TrimSuffix(page, "/")+"/"))
	} else {
		b.WriteString(l.T("cards.on_the_web_page"))
	}
	return b.String()
}
