package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/policy"
)

const (
	fzSecret   = "fuzz-webhook-secret"
	fzChat     = int64(-100777)
	fzApprover = int64(4242)
	fzStranger = int64(6666)
	fzRotate   = 2000 // updates per database and fake, so a long run stays fast
	fzRidMark  = "{rid}"
	fzGidMark  = "{gid}"
)

// fzGateway is a gateway (gatewaytest.Fuzz) with the Telegram adapter in
// webhook mode (which handles an update before answering it) in front of
// a fake Bot API of its own each generation, with one pending request and
// one active grant.
type fzGateway struct {
	*gatewaytest.Fuzz
	seq    int
	update int
	rid    string
	gid    int64
}

func newFzGateway(f *testing.F) *fzGateway {
	g := &fzGateway{}
	g.Fuzz = gatewaytest.NewFuzz(f, fzRotate, func(tb testing.TB, cfg config.Config) (config.Config, gateway.AppOptions) {
		fake := telegramtest.New(tb, telegramtest.Options{})
		if err := cfg.AddSections(telegram.Section); err != nil {
			panic(err)
		}
		a := config.NewAgent("a1")
		a.Token = "tok-fuzz-telegram-a1"
		cfg.Agents = []config.Agent{a}
		*telegram.Of(cfg) = telegram.Config{Token: telegramtest.DefaultToken, ChatID: fzChat, Chat: messenger.Chat[int64]{Approvers: []int64{fzApprover}},
			APIEndpoint: fake.Endpoint(), WebhookURL: "https://gateway.example/telegram/webhook", WebhookSecret: fzSecret}
		return cfg, gateway.AppOptions{Messengers: []messenger.Factory{telegram.Factory(telegram.Options{Config: *telegram.Of(cfg),
			Location: time.UTC, CallTimeout: 5 * time.Second})}}
	})
	return g
}

// prepare readies one input: a fresh gateway now and then, a pending
// request and an active grant.
func (g *fzGateway) prepare(t *testing.T) {
	if g.Next(t) {
		g.rid, g.gid = "", 0
	}
	g.ready(t)
}

// ready makes a pending request and an active grant, where the last
// input left none.
func (g *fzGateway) ready(t *testing.T) {
	ctx := context.Background()
	if r, err := g.App.Service.Get(ctx, g.rid); err != nil || r.Status != approvals.StatusPending {
		g.seq++ // a new target each time: an Allow always grant covers the old one
		r, _, err := g.App.Service.Submit(ctx, approvals.Submission{
			Profile: policy.Profile{Agent: "a1", Ceiling: policy.Supervised}, Capability: "fs:write",
			Target: fmt.Sprintf("/srv/fuzz/%d/report.pdf", g.seq), Channel: "web", SenderID: "owner",
			Intent: "write the report", Executor: "report_writer",
		})
		if err != nil || r.Status != approvals.StatusPending {
			t.Fatalf("setup: submit: %v, status %q", err, r.Status)
		}
		g.rid = r.ID
	}
	if gr, err := g.App.Grants.Get(ctx, g.gid); err != nil || !gr.Active {
		gr, err := g.App.Grants.Record(ctx, policy.NewGrant{Principal: policy.Principal{Channel: "web", SenderID: "owner"},
			Capability: "fs:read", Target: "/srv/notes/*", GrantedBy: "fuzz", TTL: time.Hour})
		if err != nil {
			t.Fatalf("setup: grant: %v", err)
		}
		g.gid = gr.ID
	}
}

// deliver posts one update to the webhook, as Telegram does; the update
// is handled before the answer.
func (g *fzGateway) deliver(t *testing.T, u tgbotapi.Update) {
	g.update++
	u.UpdateID = g.update
	body, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/telegram/webhook", bytes.NewReader(body))
	req.Header.Set(telegram.SecretHeader, fzSecret)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	g.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("webhook answered %d: %s", rec.Code, rec.Body)
	}
}

// check compares the request and the grant with what the update may do
// (and, when live, must do).
func (g *fzGateway) check(t *testing.T, what string, d approvals.Decision, revoke, live bool) {
	ctx := context.Background()
	r, err := g.App.Service.Get(ctx, g.rid)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case r.Status == approvals.StatusPending && d != "" && live:
		t.Fatalf("%s: a well-formed %s from an approver decided nothing", what, d)
	case r.Status != approvals.StatusPending && d == "":
		t.Fatalf("%s decided %s (%s by %s) but is not a well-formed tap from an approver", what, r.ID, r.Status, r.DecidedBy)
	case r.Status != approvals.StatusPending && (r.Decision == nil || *r.Decision != d || !strings.HasPrefix(r.DecidedBy, "telegram:")):
		t.Fatalf("%s: want %s by telegram, got %s %v by %s", what, d, r.Status, r.Decision, r.DecidedBy)
	}
	gr, err := g.App.Grants.Get(ctx, g.gid)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case gr.Active && revoke && live:
		t.Fatalf("%s: a well-formed revoke from an approver left grant #%d active", what, gr.ID)
	case !gr.Active && !revoke:
		t.Fatalf("%s revoked grant #%d but is not a well-formed revoke from an approver", what, gr.ID)
	}
}

// FuzzTelegramUpdate delivers a tap with arbitrary callback_data and a
// message with arbitrary text, from an approver, a stranger or nobody, to
// the webhook: no panic, and nothing is decided or revoked unless the
// update is well-formed and from an approver.
func FuzzTelegramUpdate(f *testing.F) {
	g := newFzGateway(f)
	for _, s := range []struct {
		data, text string
		who        uint8
	}{
		{cards.EncodeDecision(fzRidMark, approvals.AllowOnce), "/pending", 0},
		{cards.EncodeDecision(fzRidMark, approvals.AllowAlways), "/revoke " + fzGidMark, 0},
		{cards.EncodeDecision(fzRidMark, approvals.Deny), "/revoke@gateway_test_bot #" + fzGidMark, 0},
		{cards.EncodeDecision(fzRidMark, approvals.AllowOnce), "/revoke " + fzGidMark, 1},
		{cards.EncodeRevoke(1), "/grants", 0},
		{"v1:r:" + fzGidMark, "/start", 0},
		{"v1:r:" + fzGidMark, "/revoke@other_bot " + fzGidMark, 1},
		{"v1:r:" + fzGidMark, "/REVOKE " + fzGidMark, 2},
		{"v1:o:" + fzRidMark + "x", "/revoke 0", 0},
		{"v1:x:" + fzRidMark, "/revoke -" + fzGidMark, 0},
		{"v2:o:" + fzRidMark, "/nope", 0},
		{"", "", 0}, {"v1:o:r", "hello", 0}, {":::", "/", 0},
	} {
		f.Add(s.data, s.text, s.who)
	}
	f.Fuzz(func(t *testing.T, data, text string, who uint8) {
		g.prepare(t)
		var from *tgbotapi.User
		switch who % 3 {
		case 0:
			from = &tgbotapi.User{ID: fzApprover, FirstName: "Ada"}
		case 1:
			from = &tgbotapi.User{ID: fzStranger, FirstName: "Eve"}
		}
		approver := from != nil && from.ID == fzApprover
		fill := func(s string) string {
			return strings.NewReplacer(fzRidMark, g.rid, fzGidMark, strconv.FormatInt(g.gid, 10)).Replace(s)
		}

		data = fill(data)
		var d approvals.Decision
		for _, dec := range []approvals.Decision{approvals.AllowOnce, approvals.AllowAlways, approvals.Deny} {
			if approver && data == cards.EncodeDecision(g.rid, dec) {
				d = dec
			}
		}
		// The message is the request's card as Telegram stores it, with
		// its buttons: a tap counts only as one of them.
		kb := tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
			tgbotapi.NewInlineKeyboardButtonData("o", cards.EncodeDecision(g.rid, approvals.AllowOnce)),
			tgbotapi.NewInlineKeyboardButtonData("a", cards.EncodeDecision(g.rid, approvals.AllowAlways)),
			tgbotapi.NewInlineKeyboardButtonData("d", cards.EncodeDecision(g.rid, approvals.Deny))))
		g.deliver(t, tgbotapi.Update{CallbackQuery: &tgbotapi.CallbackQuery{ID: "q" + strconv.Itoa(g.update),
			From: from, Data: data, ChatInstance: "1",
			Message: &tgbotapi.Message{MessageID: 7, Chat: &tgbotapi.Chat{ID: fzChat, Type: "supergroup"}, ReplyMarkup: &kb}}})
		g.check(t, "the tap", d, approver && data == cards.EncodeRevoke(g.gid), true)
		if d != "" || (approver && data == cards.EncodeRevoke(g.gid)) {
			g.ready(t)
		}

		// A typed command is read leniently ("/revoke #07" is grant 7), so
		// only the safety half is checked: no revoke without an approver
		// asking for one.
		text = fill(text)
		revoke := approver && strings.Contains(strings.ToLower(text), "/revoke") &&
			strings.Contains(text, strconv.FormatInt(g.gid, 10))
		g.deliver(t, tgbotapi.Update{Message: &tgbotapi.Message{MessageID: 8, From: from, Text: text,
			Chat: &tgbotapi.Chat{ID: fzChat, Type: "supergroup"}, Date: int(time.Now().Unix())}})
		g.check(t, "the message", "", revoke, false)
	})
}
