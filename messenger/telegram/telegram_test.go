package telegram_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// The story of SPEC §8 from end to end: card, refused stranger, Allow
// always, the agent answered, the grant written, the card finished, and
// the next identical request allowed with no card at all.
func TestTelegram_EndToEnd_AllowAlways(t *testing.T) {
	h := newHarness(t)
	r := h.pending("fs:write", "/home/roberto/notes/todo.md")
	waiting := h.await(r.ID)

	card := h.card(r.ID)
	if got := buttonLabels(card); !slices.Equal(got, []string{cards.LabelAllowOnce, cards.LabelAllowAlways, "⏱ Allow for 1 h", cards.LabelDeny}) {
		t.Fatalf("card buttons %q", got)
	}
	for _, want := range []string{"a1 wants fs:write", "Supervised", "critical", "/home/roberto/notes/todo.md",
		"tidy the notes", "notes_tidy", "Vaglio: ✓ in line with the intent (0.80)\n", "Allow always grants fs:write on /home/roberto/notes/todo.md",
		"until " + h.locale().Date(h.clock.Now().Add(time.Duration(h.cfg.Policy.GrantTTL))),
		"⏳ expires in 9 min, " + h.locale().Clock(r.ExpiresAt), " JST\n"} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}

	q := h.fake.PressButton(t, mallory, chatID, card.ID, "Allow always")
	if a := h.answerOf(q); !a.ShowAlert || a.Text != telegram.NotApprover {
		t.Errorf("stranger's tap answered %+v, want the not-an-approver alert", a)
	}
	if got := h.get(r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("a stranger's tap changed the request: %s", got.Status)
	}

	// Allow always opens the scope keyboard, narrowest first, then the
	// every-agent keyboard's button and Back; the tap on a scope decides.
	q = h.fake.PressButton(t, roberto, chatID, card.ID, "Allow always")
	if a := h.answerOf(q); a.ShowAlert {
		t.Fatalf("Allow always answered %+v", a)
	}
	scopes := h.keyboardShows(card, "← Back")
	if got, want := buttonLabels(scopes), []string{"♾ /home/roberto/notes/todo.md", "♾ /home/roberto/notes/*.md",
		"♾ /home/roberto/notes/*", "🌐 For every agent of this principal…", "← Back"}; !slices.Equal(got, want) {
		t.Fatalf("scope keyboard %q, want %q", got, want)
	}
	if got := h.get(r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("opening the scopes decided: %s", got.Status)
	}
	q = h.fake.PressButton(t, roberto, chatID, card.ID, "notes/*.md")
	var got answer
	select {
	case got = <-waiting:
	case <-time.After(waitLong):
		t.Fatal("the waiting agent got no answer")
	}
	if got.code != http.StatusOK || got.r.Status != approvals.StatusAllowed || got.r.Decision == nil ||
		*got.r.Decision != approvals.AllowAlways || got.r.GrantID == nil {
		t.Fatalf("agent got %d %+v", got.code, got.r)
	}
	if a := h.answerOf(q); a.ShowAlert || !strings.Contains(a.Text, "Allowed always") {
		t.Errorf("approver's tap answered %+v", a)
	}
	g, err := h.app.Grants.Get(context.Background(), *got.r.GrantID)
	if err != nil || !g.Active || g.Capability != "fs:write" || !strings.Contains(g.GrantedBy, "Roberto (42)") ||
		g.Target != "/home/roberto/notes/*.md" {
		t.Fatalf("grant %+v, %v (want the chosen scope /home/roberto/notes/*.md)", g, err)
	}
	done := h.cardShows(card, "♾ Allowed always by Roberto (grant #")
	if len(done.Buttons()) != 0 {
		t.Errorf("finished card still has buttons %q", buttonLabels(done))
	}
	if !strings.Contains(done.Text, "until "+h.locale().Date(*g.ExpiresAt)) {
		t.Errorf("finished card does not say until when the grant lasts:\n%s", done.Text)
	}

	sends := len(h.fake.CallsTo("sendMessage"))
	code, again := h.ask("fs:write", "/home/roberto/notes/todo.md", "5s")
	if code != http.StatusOK || again.Status != approvals.StatusAllowed || again.GrantID == nil || *again.GrantID != g.ID {
		t.Fatalf("the same request again: %d %+v, want allowed by grant #%d", code, again, g.ID)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(h.fake.CallsTo("sendMessage")); n != sends {
		t.Errorf("a request allowed by a grant sent %d new message(s)", n-sends)
	}
	for _, m := range h.fake.BotMessages() {
		if m.ChatID != chatID {
			t.Errorf("a card went to chat %d, not telegram.chat_id", m.ChatID)
		}
	}
}

// code:exec and mail:send never get a grant: no button, and a forged
// Allow always callback is refused with an alert and changes nothing.
func TestTelegram_NoAllowAlwaysForAlwaysCapabilities(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct{ capability, target string }{
		{"code:exec", "make test"},
		{"mail:send", "boss@example.com"},
	} {
		t.Run(tc.capability, func(t *testing.T) {
			r := h.pending(tc.capability, tc.target)
			card := h.card(r.ID)
			if got := buttonLabels(card); !slices.Equal(got, []string{cards.LabelAllowOnce, cards.LabelDeny}) {
				t.Fatalf("buttons %q, want Allow once and Deny only", got)
			}
			q := h.fake.Press(roberto, chatID, card.ID, cards.EncodeDecision(r.ID, approvals.AllowAlways))
			a := h.answerOf(q)
			// Not a button of the card: refused before the service is asked.
			if !a.ShowAlert || !strings.Contains(a.Text, "not valid") {
				t.Errorf("forged Allow always answered %+v", a)
			}
			if got := h.get(r.ID); got.Status != approvals.StatusPending || got.GrantID != nil {
				t.Errorf("forged Allow always changed the request: %+v", got)
			}
			if n := h.countRows(`SELECT COUNT(*) FROM grants WHERE capability = $1`, tc.capability); n != 0 {
				t.Errorf("%d grant(s) written for %s", n, tc.capability)
			}
		})
	}
	q := h.fake.Press(roberto, chatID, 1, "v2:x:'; DROP TABLE requests;--")
	if a := h.answerOf(q); !a.ShowAlert {
		t.Errorf("garbage callback data answered %+v, want an alert", a)
	}
}

// A double tap and two approvers racing: one decision, and the other tap
// is told who won.
func TestTelegram_FirstTapWins(t *testing.T) {
	h := newHarness(t)
	t.Run("double tap", func(t *testing.T) {
		r := h.pending("fs:write", "/tmp/double")
		card := h.card(r.ID)
		q1 := h.fake.PressButton(t, roberto, chatID, card.ID, "Allow once")
		q2 := h.fake.PressButton(t, roberto, chatID, card.ID, "Deny")
		a1, a2 := h.answerOf(q1), h.answerOf(q2)
		if a1.ShowAlert || a1.Text != "✅ Allowed once" {
			t.Errorf("first tap answered %+v", a1)
		}
		if !a2.ShowAlert || !strings.HasPrefix(a2.Text, "Already decided: allowed once by Roberto at ") {
			t.Errorf("second tap answered %+v", a2)
		}
		if got := h.get(r.ID); got.Decision == nil || *got.Decision != approvals.AllowOnce {
			t.Errorf("decision %+v, want the first tap's", got.Decision)
		}
	})
	t.Run("two approvers", func(t *testing.T) {
		r := h.pending("fs:write", "/tmp/race")
		card := h.card(r.ID)
		var wg sync.WaitGroup
		var qr, qa string
		wg.Go(func() { qr = h.fake.PressButton(t, roberto, chatID, card.ID, "Allow once") })
		wg.Go(func() { qa = h.fake.PressButton(t, anna, chatID, card.ID, "Deny") })
		wg.Wait()
		ar, aa := h.answerOf(qr), h.answerOf(qa)
		got := h.get(r.ID)
		winner, loser := ar, aa
		winnerName := "Roberto"
		if got.Decision != nil && *got.Decision == approvals.Deny {
			winner, loser, winnerName = aa, ar, "Anna"
		}
		if winner.ShowAlert || !loser.ShowAlert || !strings.Contains(loser.Text, "Already decided: ") ||
			!strings.Contains(loser.Text, " by "+winnerName+" at ") {
			t.Errorf("winner %s answered %+v, loser %+v", winnerName, winner, loser)
		}
		if n := h.countRows(`SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = $2`, r.ID, storage.AuditDecision); n != 1 {
			t.Errorf("%d decisions recorded, want 1", n)
		}
	})
}

// A decision on another channel (the admin API here, the web page alike)
// edits the Telegram card, and a late tap learns who decided.
func TestTelegram_DecisionElsewhereEditsCard(t *testing.T) {
	h := newHarness(t)
	r := h.pending("fs:write", "/tmp/elsewhere")
	card := h.card(r.ID)
	code, _ := h.do("POST", "/v1/requests/"+r.ID+"/decision", adminToken, map[string]string{"decision": "deny"})
	if code != http.StatusOK {
		t.Fatalf("admin decision: %d", code)
	}
	done := h.cardShows(card, "⛔ Denied by boss")
	if len(done.Buttons()) != 0 {
		t.Errorf("card keeps buttons %q", buttonLabels(done))
	}
	q := h.fake.Press(roberto, chatID, card.ID, cards.EncodeDecision(r.ID, approvals.AllowOnce))
	if a := h.answerOf(q); !a.ShowAlert || !strings.HasPrefix(a.Text, "Already decided: denied by boss at ") {
		t.Errorf("late tap answered %+v", a)
	}
}

func TestTelegram_FloodControl429(t *testing.T) {
	h := newHarness(t)
	h.fake.Inject("sendMessage", telegramtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 2, Times: 1})
	r := h.pending("fs:write", "/tmp/flood")
	refused := h.fake.WaitFor(t, waitLong, "the 429", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.Status == http.StatusTooManyRequests
	})
	h.card(r.ID)
	sent := h.fake.WaitFor(t, waitLong, "the card", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.OK()
	})
	if gap := sent.At.Sub(refused.At); gap < 1900*time.Millisecond {
		t.Errorf("resent %s after a 429 with retry_after 2", gap)
	}
}

func TestTelegram_ServerErrorsLoseNothing(t *testing.T) {
	testOutage(t, 5*time.Second)
}

// TestTelegram_ServerErrorsLoseNothing_Long is the 60-second outage of the
// issue; it needs wall time (the dispatcher's backoff timers are real), so
// it runs only with -telegram.long.
func TestTelegram_ServerErrorsLoseNothing_Long(t *testing.T) {
	if testing.Short() || !*long {
		t.Skip("a 60 s outage: run with -telegram.long")
	}
	testOutage(t, 60*time.Second)
}

// testOutage: every call but getUpdates fails with 500 (and some with an
// HTML error page, as a proxy would answer) for d; the request stays
// pending and visible, and its card arrives once, after.
func testOutage(t *testing.T, d time.Duration) {
	h := newHarness(t)
	until := time.Now().Add(d)
	h.fake.Inject("sendMessage", telegramtest.Fault{Status: http.StatusBadGateway, HTML: true, Times: 2})
	h.fake.Inject("", telegramtest.Fault{Status: http.StatusInternalServerError, Until: until})
	r := h.pending("fs:write", "/tmp/outage")
	h.fake.WaitFor(t, waitLong, "a failed send", func(c telegramtest.Call) bool {
		return c.Method == "sendMessage" && c.Status >= 500
	})
	if got := h.get(r.ID); got.Status != approvals.StatusPending {
		t.Fatalf("during the outage the request is %s", got.Status)
	}
	pending, err := h.app.Service.ListPending(context.Background(), 10)
	if err != nil || len(pending) != 1 || pending[0].ID != r.ID {
		t.Fatalf("the web page's pending list: %v, %v", pending, err)
	}
	h.fake.WaitUntil(t, d+90*time.Second, "card after the outage", func() bool {
		for _, m := range h.fake.BotMessages() {
			if strings.Contains(m.Text, r.ID) {
				return true
			}
		}
		return false
	})
	if time.Now().Before(until) {
		t.Fatal("a card arrived during the outage")
	}
	time.Sleep(300 * time.Millisecond)
	n := 0
	for _, m := range h.fake.BotMessages() {
		if strings.Contains(m.Text, r.ID) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d cards for one request", n)
	}
	failed := 0
	for _, c := range h.fake.CallsTo("sendMessage") {
		if !c.OK() {
			failed++
		}
	}
	t.Logf("outage %s: %d failed sends before the card", d, failed)
}

func TestTelegram_Webhook(t *testing.T) {
	const secret = "s3cret-Webhook_token"
	h := newHarness(t, webhookMode(secret))
	h.fake.WaitUntil(t, waitLong, "webhook registered", func() bool {
		url, s := h.fake.Webhook()
		return url == telegram.Of(h.cfg).WebhookURL && s == secret
	})
	for _, tc := range []struct {
		name, secret string
		set          bool
	}{
		{"missing", "", false},
		{"empty", "", true},
		{"wrong", "s3cret-Webhook_tokeN", true},
		{"prefix", "s3cret", true},
	} {
		t.Run(tc.name+" secret", func(t *testing.T) {
			req, _ := http.NewRequest("POST", telegram.Of(h.cfg).WebhookURL, strings.NewReader(`{"update_id":1}`))
			if tc.set {
				req.Header.Set(telegram.SecretHeader, tc.secret)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
		})
	}

	r := h.pending("fs:write", "/tmp/hook")
	card := h.card(r.ID)
	tap := h.fake.Callback(roberto, chatID, card.ID, cards.EncodeDecision(r.ID, approvals.AllowOnce))
	q := tap.CallbackQuery.ID
	h.fake.Enqueue(tap)
	if a := h.answerOf(q); a.Text != "✅ Allowed once" {
		t.Errorf("tap answered %+v", a)
	}
	// Telegram redelivers an update it saw no 2xx for: one effect only.
	h.fake.Enqueue(tap)
	h.fake.Enqueue(tap)
	if got := h.fake.Deliveries(); len(got) < 3 || !allOK(got) {
		t.Errorf("webhook answered %v, want 200 for every delivery", got)
	}
	if a := h.fake.Answers(q); len(a) != 1 {
		t.Errorf("the duplicated tap was answered %d times", len(a))
	}
	if n := h.countRows(`SELECT COUNT(*) FROM audit WHERE request_id = $1 AND event = $2`, r.ID, storage.AuditDecision); n != 1 {
		t.Errorf("%d decisions recorded", n)
	}
	h.cardShows(card, "✅ Allowed once by Roberto")
	if n := len(h.fake.CallsTo("getUpdates")); n != 0 {
		t.Errorf("%d getUpdates calls in webhook mode", n)
	}
}

func allOK(statuses []int) bool {
	for _, s := range statuses {
		if s != http.StatusOK {
			return false
		}
	}
	return true
}

func TestTelegram_ExpiryAndCancelEditTheCard(t *testing.T) {
	h := newHarness(t)
	expiring := h.pending("fs:write", "/tmp/expiring")
	ce := h.card(expiring.ID)

	waiting := h.await(expiring.ID)
	h.clock.Advance(time.Duration(h.cfg.Approvals.Timeout) + time.Second)
	done := h.cardShows(ce, "⌛ Expired")
	if len(done.Buttons()) != 0 {
		t.Errorf("expired card keeps buttons")
	}
	if got := <-waiting; got.r.Status != approvals.StatusExpired {
		t.Errorf("the waiting agent got %s", got.r.Status)
	}

	cancelled := h.pending("fs:write", "/tmp/withdrawn")
	cc := h.card(cancelled.ID)
	if code, _ := h.do("DELETE", "/v1/requests/"+cancelled.ID, agentToken, nil); code != http.StatusOK {
		t.Fatalf("cancel: %d", code)
	}
	done = h.cardShows(cc, "↩ Withdrawn by the agent")
	if len(done.Buttons()) != 0 {
		t.Errorf("withdrawn card keeps buttons")
	}
	q := h.fake.Press(roberto, chatID, ce.ID, cards.EncodeDecision(expiring.ID, approvals.AllowOnce))
	if a := h.answerOf(q); !a.ShowAlert || !strings.HasPrefix(a.Text, "Already decided: expired") {
		t.Errorf("a tap on the expired card answered %+v", a)
	}
}

func TestTelegram_RestartBetweenCardAndTap(t *testing.T) {
	h := newHarness(t)
	r := h.pending("fs:write", "/tmp/restart")
	card := h.card(r.ID)
	h.restart()
	q := h.fake.PressButton(t, roberto, chatID, card.ID, "Allow once")
	if a := h.answerOf(q); a.ShowAlert {
		t.Errorf("tap after restart answered %+v", a)
	}
	h.cardShows(card, "✅ Allowed once by Roberto")
	if got := h.get(r.ID); got.Status != approvals.StatusAllowed {
		t.Errorf("after restart and tap the request is %s", got.Status)
	}
	if n := len(h.fake.BotMessages()); n != 1 {
		t.Errorf("%d bot messages, want the one card", n)
	}
}

func TestTelegram_EscapedTarget(t *testing.T) {
	h := newHarness(t)
	target := `/tmp/<b>bold</b> & "quoted" 'too'.txt`
	r := h.pending("fs:write", target)
	card := h.card(r.ID)
	if !strings.Contains(card.Text, "Target: "+target) {
		t.Errorf("the visible text does not show the target as given:\n%s", card.Text)
	}
	if !strings.Contains(card.HTML, "&lt;b&gt;bold&lt;/b&gt; &amp; &#34;quoted&#34; &#39;too&#39;") {
		t.Errorf("target not escaped in the HTML:\n%s", card.HTML)
	}
	if strings.Contains(card.HTML, "<b>bold</b>") {
		t.Errorf("the target became markup:\n%s", card.HTML)
	}
}

func TestTelegram_GrantsAndRevoke(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	g, err := h.app.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
		Capability: "fs:read", Target: "/home/roberto/inv/*", GrantedBy: "cli", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}

	id := h.fake.Say(mallory, chatID, "/revoke "+itoa(g.ID), 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, telegram.NotApprover) {
		t.Errorf("/revoke from a stranger answered %q", got)
	}
	if cur, _ := h.app.Grants.Get(ctx, g.ID); !cur.Active {
		t.Fatal("a stranger revoked a grant")
	}

	id = h.fake.Say(roberto, roberto.ID, "/grants", 0)
	var list telegramtest.Message
	h.fake.WaitUntil(t, waitLong, "the grants list", func() bool {
		for _, m := range h.fake.Messages(roberto.ID) {
			if m.ReplyTo == id {
				list = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(list.Text, "#"+itoa(g.ID)+" fs:read on /home/roberto/inv/*") {
		t.Errorf("grants list:\n%s", list.Text)
	}
	q := h.fake.PressButton(t, mallory, roberto.ID, list.ID, "Revoke #"+itoa(g.ID))
	if a := h.answerOf(q); !a.ShowAlert || a.Text != telegram.NotApprover {
		t.Errorf("stranger's Revoke answered %+v", a)
	}
	q = h.fake.PressButton(t, roberto, roberto.ID, list.ID, "Revoke #"+itoa(g.ID))
	if a := h.answerOf(q); a.Text != "Grant #"+itoa(g.ID)+" revoked." {
		t.Errorf("Revoke answered %+v", a)
	}
	if cur, _ := h.app.Grants.Get(ctx, g.ID); cur.Active || cur.RevokedAt == nil {
		t.Errorf("grant still active after Revoke: %+v", cur)
	}
	h.fake.WaitUntil(t, waitLong, "the list redrawn", func() bool {
		m, _ := h.fake.Message(roberto.ID, list.ID)
		return strings.Contains(m.Text, "No active grants")
	})

	// anna decides, but revokes nothing: only telegram.admins do (by
	// default the first approver, roberto), as only the page's admins.
	id = h.fake.Say(anna, chatID, "/revoke "+itoa(g.ID), 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Only telegram.admins revoke grants") {
		t.Errorf("/revoke from an approver who is not an admin answered %q", got)
	}
	id = h.fake.Say(roberto, chatID, "/revoke "+itoa(g.ID), 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "not active") {
		t.Errorf("/revoke of a revoked grant answered %q", got)
	}
	id = h.fake.Say(anna, chatID, "/revoke twelve", 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Usage: /revoke ID") {
		t.Errorf("/revoke twelve answered %q", got)
	}
}

func TestTelegram_Commands(t *testing.T) {
	h := newHarness(t)
	h.fake.WaitUntil(t, waitLong, "commands registered", func() bool { return len(h.fake.Commands()) > 0 })
	var names []string
	for _, c := range h.fake.Commands() {
		names = append(names, c.Command)
	}
	for _, want := range []string{"pending", "grants", "revoke", "help", "start"} {
		if !slices.Contains(names, want) {
			t.Errorf("command %s not registered (got %v)", want, names)
		}
	}

	id := h.fake.Say(mallory, mallory.ID, "/start", 0)
	if got := h.replyTo(mallory.ID, id); !strings.Contains(got, "Your Telegram user id is 666") ||
		!strings.Contains(got, telegram.NotApprover) {
		t.Errorf("/start for a stranger answered %q", got)
	}
	id = h.fake.Say(roberto, roberto.ID, "/start@gateway_test_bot", 0)
	if got := h.replyTo(roberto.ID, id); !strings.Contains(got, "Your Telegram user id is 42") ||
		!strings.Contains(got, "You are an approver") {
		t.Errorf("/start for an approver answered %q", got)
	}
	id = h.fake.Say(mallory, mallory.ID, "/help", 0)
	if got := h.replyTo(mallory.ID, id); !strings.Contains(got, "/pending") {
		t.Errorf("/help answered %q", got)
	}
	id = h.fake.Say(mallory, chatID, "/pending", 0)
	if got := h.replyTo(chatID, id); !strings.Contains(got, telegram.NotApprover) {
		t.Errorf("/pending for a stranger answered %q", got)
	}
	before := len(h.fake.Messages(chatID))
	h.fake.Say(roberto, chatID, "/pending@some_other_bot", 0)

	r := h.pending("fs:write", "/tmp/resend")
	first := h.card(r.ID)
	id = h.fake.Say(roberto, roberto.ID, "/pending", 0)
	if got := h.replyTo(roberto.ID, id); !strings.Contains(got, "Sending 1 pending card(s) again") {
		t.Errorf("/pending answered %q", got)
	}
	var second telegramtest.Message
	h.fake.WaitUntil(t, waitLong, "the card sent again", func() bool {
		for _, m := range h.fake.Messages(chatID) {
			if m.From == nil && m.ID != first.ID && strings.Contains(m.Text, r.ID) {
				second = m
				return true
			}
		}
		return false
	})
	if len(second.Buttons()) != 4 {
		t.Errorf("re-sent card has buttons %q", buttonLabels(second))
	}
	// The message addressed to another bot got no answer.
	for _, m := range h.fake.Messages(chatID)[before:] {
		if m.From == nil && m.ReplyTo != 0 {
			t.Errorf("answered a command for another bot: %q", m.Text)
		}
	}
}

func TestTelegram_ReplyBecomesNote(t *testing.T) {
	h := newHarness(t)
	r := h.pending("fs:write", "/tmp/noted")
	card := h.card(r.ID)

	id := h.fake.Say(roberto, chatID, "too early", card.ID)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Decide first") {
		t.Errorf("a note on a pending card answered %q", got)
	}
	h.fake.PressButton(t, roberto, chatID, card.ID, "Allow once")
	h.cardShows(card, "Allowed once by Roberto")

	id = h.fake.Say(mallory, chatID, "I am the owner, honest", card.ID)
	if got := h.replyTo(chatID, id); !strings.Contains(got, telegram.NotApprover) {
		t.Errorf("a stranger's note answered %q", got)
	}
	id = h.fake.Say(roberto, chatID, "only the <drafts> folder & nothing else", card.ID)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Note saved") {
		t.Errorf("a note answered %q", got)
	}
	if got := h.get(r.ID); got.Note != "only the <drafts> folder & nothing else" {
		t.Errorf("the agent reads note %q", got.Note)
	}
	h.cardShows(card, "📝 Note: only the <drafts> folder & nothing else")

	h.clock.Advance(approvals.NoteWindow + time.Minute)
	id = h.fake.Say(roberto, chatID, "too late", card.ID)
	if got := h.replyTo(chatID, id); !strings.Contains(got, "Too late") {
		t.Errorf("a late note answered %q", got)
	}
	if got := h.get(r.ID); got.Note != "only the <drafts> folder & nothing else" {
		t.Errorf("a late note changed it to %q", got.Note)
	}
}

// A send that hangs times out; its error (which carries the request URL,
// token and all) is logged redacted, and the card comes on the retry.
func TestTelegram_TokenNeverLogged(t *testing.T) {
	h := newHarness(t)
	h.fake.Inject("sendMessage", telegramtest.Fault{Hang: true, Times: 1})
	r := h.pending("fs:write", "/tmp/hang")
	h.card(r.ID)
	logs := h.logs.String()
	if !strings.Contains(logs, "card send failed") || !strings.Contains(logs, "<bot-token>") {
		t.Errorf("expected a redacted send failure in the log:\n%s", logs)
	}
	// newHarness's cleanup checks that the token itself never appears.
}

// Shutdown does not wait for the 30-second long poll in flight.
func TestTelegram_ShutdownIsImmediate(t *testing.T) {
	h := newHarness(t)
	h.fake.WaitFor(t, waitLong, "the bot set up", func(c telegramtest.Call) bool { return c.Method == "setMyCommands" })
	h.fake.WaitUntil(t, waitLong, "a getUpdates call held", func() bool { return h.fake.Held() > 0 })
	// Half the poll's 30 s: a shutdown that waited for it is caught,
	// a busy machine's slow one is not.
	if took := h.stop(); took > 15*time.Second {
		t.Errorf("shutdown took %s: it waited for the long poll", took)
	}
}

func TestTelegram_RefusedToken(t *testing.T) {
	fake := telegramtest.New(t, telegramtest.Options{})
	cfg := telegram.Config{Token: "999:wrong", ChatID: chatID, Chat: messenger.Chat[int64]{Approvers: []int64{42}}, APIEndpoint: fake.Endpoint()}
	_, err := telegram.New(telegram.Options{Config: cfg, Service: &approvals.Service{}})
	if err == nil || !strings.Contains(err.Error(), "telegram.token_env") || strings.Contains(err.Error(), "999:wrong") {
		t.Errorf("New with a refused token: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestTelegram_CommandsOnlyInTheirChats: a command typed in another group
// the bot is in, even by an approver, or in a stranger's private chat
// (other than /start and /help), gets no message at all there and
// changes nothing; the same command in chat_id or the approver's private
// chat is answered.
func TestTelegram_CommandsOnlyInTheirChats(t *testing.T) {
	h := newHarness(t)
	const otherGroup = int64(-100777)
	r := h.pending("fs:write", "/tmp/foreign")
	h.card(r.ID)
	for _, cmd := range []string{"/history", "/grants", "/pending", "/revoke 1", "/start", "/help"} {
		h.fake.Say(roberto, otherGroup, cmd, 0)
	}
	h.fake.Say(mallory, mallory.ID, "/history", 0)
	// A command in chat_id after them is answered: by then the others were handled.
	id := h.fake.Say(roberto, chatID, "/grants", 0)
	h.replyTo(chatID, id)
	id = h.fake.Say(roberto, roberto.ID, "/history", 0)
	h.replyTo(roberto.ID, id)
	for _, m := range h.fake.Messages(otherGroup) {
		if m.From == nil {
			t.Errorf("the bot wrote in a foreign group: %q", m.Text)
		}
	}
	for _, m := range h.fake.Messages(mallory.ID) {
		if m.From == nil {
			t.Errorf("the bot answered a stranger's /history: %q", m.Text)
		}
	}
	n := 0
	for _, m := range h.fake.Messages(chatID) {
		if m.From == nil && strings.Contains(m.Text, r.ID) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d cards of %s in chat_id: /pending in a foreign group re-sent it", n, r.ID)
	}
}

// TestTelegram_PollingNeverDeletesAWebhook: another instance holds the bot
// with a webhook; this one, polling, gets 409, backs off and names the
// holder's host (not its secret path), and never deletes the webhook.
func TestTelegram_PollingNeverDeletesAWebhook(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		resp, err := http.PostForm(fmt.Sprintf(h.fake.Endpoint(), botToken, "setWebhook"),
			url.Values{"url": {"https://other-instance.example/telegram/s3cretpath"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
	h.fake.WaitUntil(t, waitLong, "the conflict logged", func() bool {
		return strings.Contains(h.logs.String(), "another instance holds this Telegram bot")
	})
	logs := h.logs.String()
	if !strings.Contains(logs, "other-instance.example") || strings.Contains(logs, "s3cretpath") {
		t.Errorf("the log should name the holder's host and not its path:\n%s", logs)
	}
	if calls := h.fake.CallsTo("deleteWebhook"); len(calls) != 0 {
		t.Errorf("deleteWebhook was called %d times", len(calls))
	}
	if wh, _ := h.fake.Webhook(); wh == "" {
		t.Error("the other instance's webhook is gone")
	}
}

// TestTelegram_CardsPerMinute: past its cards_per_minute an agent's
// requests still wait, with no card of their own: one message says how
// many more wait, with the web page's link; they are decided on the web
// page (or by the API), and deciding one posts nothing.
func TestTelegram_CardsPerMinute(t *testing.T) {
	h := newHarness(t, func(h *harness) {
		h.cfg.Agents[0].CardsPerMinute = 2
		h.cfg.Web.PublicURL = "https://gw.example"
	})
	var rs []approvals.Request
	for i := range 5 {
		rs = append(rs, h.pending("fs:write", fmt.Sprintf("/tmp/flood-%d", i)))
	}
	var summary telegramtest.Message
	h.fake.WaitUntil(t, waitLong, "the summary", func() bool {
		for _, m := range h.fake.Messages(chatID) {
			// The summary counts what waits when it is sent: the five
			// requests arrive one by one, so the dispatcher may round
			// between them and count fewer than the three held in the end.
			if m.From == nil && heldSummary.MatchString(m.Text) {
				summary = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(summary.Text, "https://gw.example/") || len(summary.Buttons()) != 0 {
		t.Errorf("summary %q", summary.Text)
	}
	cardsOf := func() int {
		n := 0
		for _, m := range h.fake.Messages(chatID) {
			for _, r := range rs {
				if m.From == nil && strings.Contains(m.Text, r.ID) {
					n++
				}
			}
		}
		return n
	}
	if n := cardsOf(); n != 2 {
		t.Errorf("%d cards posted, want 2", n)
	}
	before := len(h.fake.Messages(chatID))
	if _, err := h.app.Service.Decide(context.Background(), rs[4].ID, approvals.Deny,
		approvals.Actor{Channel: "web", ID: "owner", Name: "owner"}); err != nil {
		t.Fatal(err)
	}
	if got, err := h.app.Service.Get(context.Background(), rs[4].ID); err != nil || got.Status != approvals.StatusDenied {
		t.Fatalf("a held request decided on the web: %v %v", got.Status, err)
	}
	h.fake.WaitUntil(t, waitLong, "the held card in sync", func() bool {
		var shown sql.NullString
		_ = h.app.DB.QueryRowContext(context.Background(), `SELECT shown_status FROM cards WHERE request_id = $1 AND channel = 'telegram'`,
			rs[4].ID).Scan(&shown)
		return shown.String == string(approvals.StatusDenied)
	})
	if after := len(h.fake.Messages(chatID)); after != before {
		t.Errorf("deciding a held request posted %d message(s)", after-before)
	}
}

// heldSummary is the summary of requests held back by cards_per_minute.
var heldSummary = regexp.MustCompile(`\b[1-3] more request\(s\) from a1\b`)

var _ approvals.Summarizer = (*telegram.Bot)(nil)
