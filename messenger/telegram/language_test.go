package telegram_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
)

// TestTelegram_Italian: with telegram.language = "it" the card, its
// buttons, the alerts and the command answers are Italian, times are in
// server.timezone (JST here, not the machine's zone) with the expiry also
// relative, and what the agent wrote is shown as written.
func TestTelegram_Italian(t *testing.T) {
	h := newHarness(t, inLanguage("it"))
	l := h.locale()
	r := h.pending("fs:write", "/home/roberto/notes/todo.md")
	card := h.card(r.ID)

	if got := buttonLabels(card); !slices.Equal(got, []string{"✅ Consenti una volta", "♾ Consenti sempre", "⏱ Consenti per 1 h", "⛔ Nega"}) {
		t.Fatalf("buttons %q", got)
	}
	for _, want := range []string{
		"a1 chiede fs:write", "Agente: a1 · livello Supervised", "Capacità: fs:write · ⚠️ critica",
		"Obiettivo: /home/roberto/notes/todo.md",
		"Intento: tidy the notes", // the agent's words, untranslated
		"Esecutore: notes_tidy", "Vaglio: ✓ in linea con l'intento (0.80)\n",
		"♾ Consenti sempre autorizza fs:write su /home/roberto/notes/todo.md per web/owner per l'agente a1 fino al " +
			l.Date(h.clock.Now().Add(time.Duration(h.cfg.Policy.GrantTTL))),
		"⏳ scade tra 9 min, " + l.Clock(r.ExpiresAt), " JST\n", "Richiesta " + r.ID,
	} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}

	// Alerts: a stranger's tap, then the approver's.
	q := h.fake.PressButton(t, mallory, chatID, card.ID, "Consenti sempre")
	if a := h.answerOf(q); !a.ShowAlert || a.Text != "Non sei tra gli approvatori di questo gateway" {
		t.Errorf("stranger's tap answered %+v", a)
	}
	q = h.fake.PressButton(t, roberto, chatID, card.ID, "Consenti una volta")
	if a := h.answerOf(q); a.Text != "✅ Consentita una volta" {
		t.Errorf("approver's tap answered %+v", a)
	}
	done := h.cardShows(card, "✅ Consentita una volta da Roberto · ")
	if !strings.HasSuffix(strings.Split(done.Text, "\n")[len(strings.Split(done.Text, "\n"))-2], " JST") {
		t.Errorf("finished card's outcome line lacks the zone:\n%s", done.Text)
	}
	q = h.fake.Press(anna, chatID, card.ID, cards.EncodeDecision(r.ID, approvals.Deny)) // a stale card on another phone
	if a := h.answerOf(q); !strings.HasPrefix(a.Text, "Già decisa: consentita una volta da Roberto alle ") ||
		!strings.HasSuffix(a.Text, " JST") {
		t.Errorf("second tap answered %+v", a)
	}

	// Command answers and the command menu.
	id := h.fake.Say(roberto, roberto.ID, "/pending", 0)
	if got := h.replyTo(roberto.ID, id); got != "Nulla in attesa." {
		t.Errorf("/pending answered %q", got)
	}
	id = h.fake.Say(mallory, mallory.ID, "/start", 0)
	if got := h.replyTo(mallory.ID, id); !strings.Contains(got, "Il tuo user id Telegram è 666.") ||
		!strings.Contains(got, "Non sei tra gli approvatori") {
		t.Errorf("/start answered %q", got)
	}
	id = h.fake.Say(roberto, roberto.ID, "/help", 0)
	if got := h.replyTo(roberto.ID, id); !strings.Contains(got, "Tocca ✅ Consenti una volta") {
		t.Errorf("/help answered %q", got)
	}
	g, err := h.app.Grants.Record(context.Background(), policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:read", Target: "/home/roberto/inv/*", GrantedBy: "cli", TTL: 48 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id = h.fake.Say(roberto, roberto.ID, "/grants", 0)
	var list string
	h.fake.WaitUntil(t, waitLong, "the grants list", func() bool {
		for _, m := range h.fake.Messages(roberto.ID) {
			if m.ReplyTo == id {
				list = m.Text
				return true
			}
		}
		return false
	})
	for _, want := range []string{"Autorizzazioni attive", "#" + itoa(g.ID) + " fs:read su /home/roberto/inv/*",
		"per web/owner · da cli · fino al " + l.Date(*g.ExpiresAt) + " · mai usata"} {
		if !strings.Contains(list, want) {
			t.Errorf("/grants lacks %q:\n%s", want, list)
		}
	}
	h.fake.WaitUntil(t, waitLong, "commands registered", func() bool { return len(h.fake.Commands()) > 0 })
	for _, c := range h.fake.Commands() {
		if c.Command == "pending" && c.Description != "Rimanda le schede in attesa di approvazione" {
			t.Errorf("/pending described as %q", c.Description)
		}
	}
}
