package slack_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
)

// TestSlack_Italian: with slack.language = "it" the card, its buttons and
// confirm dialog, the private refusals, the /approvals answers and the Home
// tab are Italian; times are in server.timezone (JST, not the machine's
// zone) as the date tokens' fallback, the expiry also relative; the
// agent's words stay as written.
func TestSlack_Italian(t *testing.T) {
	h := newHarness(t, func(s *setup) { slack.Of(*s.cfg).Language = "it" })
	agent := h.submit(fsWrite("/srv/reports/q1.txt"), "30s")
	id, ts, post := h.posted()
	blocks := post.Form.Get("blocks")
	for _, want := range []string{`"✅ Consenti una volta"`, `"♾ Consenti sempre"`, `"⛔ Nega"`, "Consentire sempre?",
		"a1 chiede fs:write", "Agente: a1", "Obiettivo: /srv/reports/q1.txt", "Intento: write the quarterly report",
		"⏳ scade tra 9 min, ", " JST", "Consenti sempre autorizza fs:write su /srv/reports/q1.txt per web/owner per l'agente a1 fino al "} {
		wantContains(t, "card", blocks, want)
	}
	wantContains(t, "fallback text", post.Text(), "a1 chiede fs:write su /srv/reports/q1.txt: serve un'approvazione")

	if st, _ := h.signedPost("/slack/interactions", h.click(strangerID, "eve", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("interaction answered %d", st)
	}
	wantContains(t, "refusal", h.fake.Wait(t, "chat.postEphemeral", waitFor).Text(),
		"Non sei tra gli approvatori di questo gateway. Nulla è cambiato.")

	h.signedPost("/slack/commands", h.command(approverID, "pending"), time.Now(), secret)
	got := h.answer("response_url")
	for _, want := range []string{"*Richieste in attesa (1)*", id, "a1 chiede fs:write", "scade tra 9 min, <!date^", " JST>"} {
		wantContains(t, "/approvals pending", got, want)
	}
	h.signedPost("/slack/commands", h.command(strangerID, "help"), time.Now(), secret)
	wantContains(t, "/approvals help", h.answer("response_url"), "il gateway delle approvazioni")
	h.signedPost("/slack/commands", h.command(approverID, "grants"), time.Now(), secret)
	wantContains(t, "/approvals grants", h.answer("response_url"), "Nessuna autorizzazione attiva.")

	if st, _ := h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionAllowOnce),
		time.Now(), secret); st != http.StatusOK {
		t.Fatalf("interaction answered %d", st)
	}
	if res := waitAgent(t, agent); res.req.Status != approvals.StatusAllowed {
		t.Fatalf("agent got %+v", res.req)
	}
	upd := h.fake.Wait(t, "chat.update", waitFor)
	wantContains(t, "finished card", upd.Form.Get("blocks"), "✅ Consentita una volta da roberto · ")
	wantContains(t, "finished card", upd.Form.Get("blocks"), " JST")

	h.signedPost("/slack/interactions", h.click(approverID, "roberto", id, ts, slack.SlackActionDeny), time.Now(), secret)
	wantContains(t, "second click", h.fake.Wait(t, "chat.postEphemeral", waitFor).Text(),
		"Già decisa: consentita una volta da roberto alle ")

	h.signedPost("/slack/events", slacktest.AppHomeOpened(approverID, ""), time.Now(), secret)
	view := string(h.fake.Wait(t, "views.publish", waitFor).Body)
	for _, want := range []string{"Approvazioni", "In attesa (0)", "Nulla ti aspetta.", "Autorizzazioni attive (0)"} {
		if !strings.Contains(view, want) {
			t.Errorf("home tab lacks %q: %s", want, view)
		}
	}
}
