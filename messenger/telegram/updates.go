package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/cards"
)

// SecretHeader is the header in which Telegram echoes setWebhook's
// secret_token (https://core.telegram.org/bots/api#setwebhook).
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// dedupeSize is how many update ids are remembered: Telegram redelivers a
// webhook update it got no 2xx for, and a restart may replay the last
// getUpdates batch; both come within far fewer updates than this.
const dedupeSize = 10000

// maxUpdateBytes bounds a webhook body. Updates we act on are small
// (a text is at most 4096 characters); this leaves room for any update.
const maxUpdateBytes = 1 << 20

// allowedUpdates are the only update kinds the bot asks for.
var allowedUpdates = []string{"message", "callback_query"}

// setup fills in the bot's username if New could not, and registers the
// commands with setMyCommands, retrying until Telegram answers.
func (b *Bot) setup(ctx context.Context) {
	for n := 1; ctx.Err() == nil; n++ {
		err := b.hello(ctx)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		if n == 1 || n%10 == 0 {
			b.log.Warn("bot setup failed; retrying", "attempt", n, "err", err)
		}
		wait := backoff(n)
		var e *Error
		if errors.As(err, &e) {
			wait = max(wait, e.RetryAfter)
		}
		sleep(ctx, wait)
	}
}

// commands are the bot commands shown in Telegram's menu, described in
// the bot's language.
func (b *Bot) commands() []tgbotapi.BotCommand {
	l := b.loc
	return []tgbotapi.BotCommand{
		{Command: "pending", Description: l.T("tg.cmd_pending")},
		{Command: "grants", Description: l.T("tg.cmd_grants")},
		{Command: "revoke", Description: l.T("tg.cmd_revoke")},
		{Command: "history", Description: l.T("tg.cmd_history")},
		{Command: "help", Description: l.T("tg.cmd_help")},
		{Command: "start", Description: l.T("tg.cmd_start")},
	}
}

func (b *Bot) hello(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	if b.botUsername() == "" {
		me, err := b.bot(cctx).GetMe()
		if err != nil {
			return b.apiError("getMe", err)
		}
		b.mu.Lock()
		b.username = me.UserName
		b.mu.Unlock()
	}
	if _, err := b.bot(cctx).Request(tgbotapi.NewSetMyCommands(b.commands()...)); err != nil {
		return b.apiError("setMyCommands", err)
	}
	return nil
}

func (b *Bot) botUsername() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.username
}

// registerWebhook points Telegram at our webhook, with the secret it must
// echo, retrying until it succeeds: until then no update arrives.
func (b *Bot) registerWebhook(ctx context.Context) {
	for n := 1; ctx.Err() == nil; n++ {
		cctx, cancel := context.WithTimeout(ctx, b.callTimeout)
		allowed, _ := json.Marshal(allowedUpdates)
		_, err := b.bot(cctx).MakeRequest("setWebhook", tgbotapi.Params{
			"url": b.cfg.WebhookURL, "secret_token": b.cfg.WebhookSecret, "allowed_updates": string(allowed),
		})
		cancel()
		if err == nil {
			b.log.Info("webhook registered", "path", b.webhookPath)
			return
		}
		if ctx.Err() != nil {
			return
		}
		e := b.apiError("setWebhook", err)
		b.log.Warn("could not register the webhook; retrying", "attempt", n, "err", e)
		sleep(ctx, max(backoff(n), e.RetryAfter))
	}
}

// poll is the long-polling loop. Its calls carry ctx, so shutdown does not
// wait for a 30-second poll to end (the library's GetUpdatesChan would).
// It never deletes a webhook: one that is set belongs to another instance
// of this bot (or an earlier webhook set-up), which deleting it would
// silently disconnect. A 409 backs off and says who holds the bot.
func (b *Bot) poll(ctx context.Context) {
	offset, fails := 0, 0
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, b.pollTimeout+b.callTimeout)
		updates, err := b.bot(cctx).GetUpdates(tgbotapi.UpdateConfig{
			Offset: offset, Timeout: int(b.pollTimeout / time.Second), AllowedUpdates: allowedUpdates,
		})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			fails++
			e := b.apiError("getUpdates", err)
			switch {
			case e.Code == http.StatusConflict:
				if fails == 1 || fails%20 == 0 {
					b.log.Error("another instance holds this Telegram bot; polling waits (no webhook is deleted)",
						"attempt", fails, "holder", b.holder(ctx))
				}
				sleep(ctx, max(conflictBackoff, backoff(fails), e.RetryAfter))
				continue
			case fails == 1 || fails%20 == 0:
				b.log.Warn("getUpdates failed; retrying", "attempt", fails, "err", e)
			}
			sleep(ctx, max(backoff(fails), e.RetryAfter))
			continue
		}
		if fails > 0 {
			b.log.Info("getUpdates works again", "after_attempts", fails)
			fails = 0
		}
		for _, u := range updates {
			if u.UpdateID >= offset {
				offset = u.UpdateID + 1 // confirmed by the next getUpdates
			}
			if !b.seen.add(u.UpdateID) {
				continue
			}
			select {
			case b.sem <- struct{}{}:
			case <-ctx.Done():
				return // not yet confirmed: Telegram delivers it again after a restart
			}
			// Taps on the same card are handled in update order (the first
			// tap wins, as the person saw it); everything else concurrently.
			prev, done := b.lanes.enter(laneKey(u))
			b.wg.Add(1)
			go func() {
				defer func() { <-b.sem; b.wg.Done() }()
				defer done()
				if prev != nil {
					<-prev
				}
				b.handle(ctx, u)
			}()
		}
	}
}

// conflictBackoff is the least wait after a 409: another instance holds
// the bot, which no quick retry changes.
const conflictBackoff = 30 * time.Second

// holder says which other instance holds the bot after a 409: the host of
// the webhook set on it (getWebhookInfo), else another getUpdates poller.
// The webhook's path and query are left out: they may hold a secret.
func (b *Bot) holder(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	info, err := b.bot(cctx).GetWebhookInfo()
	switch {
	case err != nil:
		return "unknown (getWebhookInfo failed)"
	case info.URL == "":
		return "another process polling getUpdates with this bot's token: stop it, or give this gateway a bot of its own"
	}
	host := "an unparsable URL"
	if u, err := url.Parse(info.URL); err == nil {
		host = u.Host
	}
	return "a webhook at " + host + ": to poll here, delete it (deleteWebhook, see docs/telegram.md) and restart"
}

// serveWebhook receives one update from Telegram. The secret header is
// compared in constant time (hashes, so not even its length leaks); a
// repeated update_id is acknowledged and ignored. The update is handled
// before answering: Telegram sends the next one only after this answer,
// and a tap's answer goes out within the same second.
func (b *Bot) serveWebhook(w http.ResponseWriter, r *http.Request) {
	got := sha256.Sum256([]byte(r.Header.Get(SecretHeader)))
	want := sha256.Sum256([]byte(b.cfg.WebhookSecret))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 || r.Header.Get(SecretHeader) == "" {
		b.log.Warn("webhook call with a wrong or missing secret", "remote", r.RemoteAddr)
		http.Error(w, "wrong or missing "+SecretHeader, http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpdateBytes+1))
	if err != nil || len(body) > maxUpdateBytes {
		http.Error(w, "unreadable or oversized update", http.StatusBadRequest)
		return
	}
	var u tgbotapi.Update
	if err := json.Unmarshal(body, &u); err != nil {
		http.Error(w, "malformed update", http.StatusBadRequest)
		return
	}
	if b.seen.add(u.UpdateID) {
		b.handle(r.Context(), u)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, "{}")
}

// handle acts on one update. It runs to completion even if ctx ends (a
// shutdown, or Telegram hanging up on the webhook), within handleTimeout.
func (b *Bot) handle(ctx context.Context, u tgbotapi.Update) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	switch {
	case u.CallbackQuery != nil:
		b.onCallback(ctx, u.CallbackQuery)
	case u.Message != nil:
		b.onMessage(ctx, u.Message)
	}
}

// laneKey is what orders an update: the request or grant a tap is about
// ("" for anything else, which needs no order).
func laneKey(u tgbotapi.Update) string {
	if u.CallbackQuery == nil {
		return ""
	}
	if cb, err := cards.Decode(u.CallbackQuery.Data); err == nil {
		if cb.Revoke() {
			return fmt.Sprintf("grant:%d", cb.GrantID)
		}
		return cb.RequestID
	}
	return ""
}

// lanes chains the handlers of updates with the same key, in the order
// they entered, while updates with other keys run side by side.
type lanes struct {
	mu   sync.Mutex
	tail map[string]chan struct{}
}

// enter returns what to wait for before handling (nil: nothing) and the
// func to call when done. Call it in update order.
func (l *lanes) enter(key string) (prev <-chan struct{}, done func()) {
	if key == "" {
		return nil, func() {}
	}
	mine := make(chan struct{})
	l.mu.Lock()
	if l.tail == nil {
		l.tail = map[string]chan struct{}{}
	}
	if p, ok := l.tail[key]; ok {
		prev = p
	}
	l.tail[key] = mine
	l.mu.Unlock()
	return prev, func() {
		close(mine)
		l.mu.Lock()
		if l.tail[key] == mine {
			delete(l.tail, key)
		}
		l.mu.Unlock()
	}
}

// dedupe remembers the last n update ids.
type dedupe struct {
	mu   sync.Mutex
	ids  map[int]struct{}
	ring []int
	next int
}

func newDedupe(n int) *dedupe {
	return &dedupe{ids: make(map[int]struct{}, n), ring: make([]int, 0, n)}
}

// add records id and reports whether it is new.
func (d *dedupe) add(id int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.ids[id]; dup {
		return false
	}
	if len(d.ring) < cap(d.ring) {
		d.ring = append(d.ring, id)
	} else {
		delete(d.ids, d.ring[d.next])
		d.ring[d.next] = id
		d.next = (d.next + 1) % len(d.ring)
	}
	d.ids[id] = struct{}{}
	return true
}

// commandName parses "/grants@my_bot args" into "grants" and reports
// whether the command is for this bot (no @, or our @username).
func commandName(text, username string) (name, args string, forUs bool) {
	first, args, _ := strings.Cut(strings.TrimSpace(text), " ")
	first = strings.TrimPrefix(first, "/")
	name, at, hasAt := strings.Cut(first, "@")
	forUs = !hasAt || username == "" || strings.EqualFold(at, username)
	return strings.ToLower(name), strings.TrimSpace(args), forUs
}
