// Package telegram is the gateway's Telegram messenger (SPEC §8): it posts
// a card for every pending request to telegram.chat_id, edits it when the
// request is decided anywhere, turns approvers' taps into decisions, and
// serves the bot commands and the owner's notes.
//
// It is built on go-telegram-bot-api/v5 and wraps its gaps (LIBRARIES.md):
// calls carry a context (the library's do not), updates come from our own
// cancellable getUpdates loop or from a webhook whose secret we check in
// constant time, updates are deduplicated on update_id, 429 retry_after is
// honoured, and the bot token is removed from every error before anything
// logs it. Retrying failed sends is the approval service's job: Post and
// Update make one attempt and say how it failed.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger"
)

// Name is the messenger's name in agents' notify lists, in the cards table
// and in decided_by ("telegram:Roberto (42)").
const Name = "telegram"

// Defaults for Options.
const (
	// DefaultPollTimeout is the getUpdates long-poll timeout: long enough to
	// keep idle traffic negligible, short enough that a dead connection is
	// noticed within a minute.
	DefaultPollTimeout = 30 * time.Second
	// DefaultCallTimeout bounds every other Bot API call. Telegram answers
	// in well under a second; a call that hangs this long is retried.
	DefaultCallTimeout = 15 * time.Second
	// handleTimeout bounds the handling of one update (a decision plus its
	// answer), also at shutdown, when it runs to completion.
	handleTimeout = 30 * time.Second
	// maxConcurrentUpdates bounds the updates handled at once, so a burst
	// of taps cannot exhaust the database pool.
	maxConcurrentUpdates = 16
)

// Options are the adapter's collaborators.
type Options struct {
	// Config is the [telegram] table with its secrets resolved.
	Config Config
	// Service is the approval flow the adapter posts cards for and decides in.
	Service *approvals.Service
	// Logger receives the adapter's log lines (never the token).
	Logger *slog.Logger
	// HTTPClient makes every Bot API call. Nil means a client with its own
	// transport, whose idle connections are closed when Run ends.
	HTTPClient *http.Client
	// Location is the time zone of times on cards; nil means time.Local.
	Location *time.Location
	// Now is the clock (the "until" of an Allow always preview, the "in 9
	// min" of an expiry).
	Now func() time.Time
	// GrantTTL is policy.grant_ttl, to show on a pending card until when
	// Allow always would grant.
	GrantTTL time.Duration
	// PublicURL is web.public_url: a card that had to cut a field links
	// to the request's page under it.
	PublicURL string
	// LinkBase is the gateway's link base (gateway.LinkBase): a step-up
	// card's Confirm on the web page goes to the request's page under it.
	LinkBase string
	// PollTimeout and CallTimeout override DefaultPollTimeout and
	// DefaultCallTimeout (tests shorten them).
	PollTimeout time.Duration
	CallTimeout time.Duration
}

// Bot is the Telegram messenger. It implements messenger.Messenger.
type Bot struct {
	cfg         Config
	svc         *approvals.Service
	log         *slog.Logger
	api         *tgbotapi.BotAPI // a template: every call uses a copy that carries its context
	client      *http.Client
	ownsClient  bool
	approvers   map[int64]bool
	loc         locale.Locale // language, zone and clock of everything people read
	now         func() time.Time
	grantTTL    time.Duration
	publicURL   string
	linkBase    string
	pollTimeout time.Duration
	callTimeout time.Duration
	webhookPath string // "" in polling mode
	redactor    *strings.Replacer
	seen        *dedupe
	sem         chan struct{}
	lanes       lanes // orders taps on the same card
	wg          sync.WaitGroup

	mu       sync.Mutex
	username string // the bot's @username, once getMe answered

	// admins may revoke grants (telegram.admins, Config.Revokers).
	admins map[int64]bool
}

var _ messenger.Messenger = (*Bot)(nil)

// Factory returns the messenger.Factory for the adapter: the
// approval service is only known once the app is being wired.
func Factory(o Options) messenger.Factory {
	return func(svc *approvals.Service, _ messenger.Host) (messenger.Messenger, error) {
		o.Service = svc
		return New(o)
	}
}

// New builds the adapter and checks the token with getMe. A token the Bot
// API refuses is an error (the gateway must not start deaf); an
// unreachable API is not: the adapter starts, cards wait in the database,
// and getMe is retried by Run.
func New(o Options) (*Bot, error) {
	c := o.Config
	switch {
	case o.Service == nil:
		return nil, errors.New("telegram: no approval service")
	case c.Token == "":
		return nil, errors.New("telegram.token_env: the bot token is empty")
	case c.ChatID == 0:
		return nil, errors.New("telegram.chat_id: required (the chat cards are posted to)")
	case len(c.Approvers) == 0:
		return nil, errors.New("telegram.approvers: required (the user ids allowed to decide)")
	}
	b := &Bot{
		cfg: c, svc: o.Service, log: o.Logger, client: o.HTTPClient, now: o.Now,
		grantTTL: o.GrantTTL, publicURL: o.PublicURL, linkBase: o.LinkBase, pollTimeout: o.PollTimeout, callTimeout: o.CallTimeout,
		approvers: map[int64]bool{}, seen: newDedupe(dedupeSize), sem: make(chan struct{}, maxConcurrentUpdates),
		redactor: strings.NewReplacer(c.Token, redactedToken, url.PathEscape(c.Token), redactedToken,
			url.QueryEscape(c.Token), redactedToken),
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	b.log = b.log.With("messenger", Name)
	if b.client == nil {
		b.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		b.ownsClient = true
	}
	if b.now == nil {
		b.now = time.Now
	}
	zone := o.Location
	if zone == nil {
		zone = time.Local
	}
	b.loc = locale.New(locale.Lang(c.Language), zone, b.now)
	if b.pollTimeout <= 0 {
		b.pollTimeout = DefaultPollTimeout
	}
	if b.callTimeout <= 0 {
		b.callTimeout = DefaultCallTimeout
	}
	for _, id := range c.Approvers {
		b.approvers[id] = true
	}
	b.admins = map[int64]bool{}
	for _, id := range c.Revokers() {
		b.admins[id] = true
	}
	if c.WebhookURL != "" {
		u, err := url.Parse(c.WebhookURL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("telegram.webhook_url: %q is not an absolute URL", c.WebhookURL)
		}
		if c.WebhookSecret == "" {
			return nil, errors.New("telegram.webhook_secret_env: required when telegram.webhook_url is set")
		}
		b.webhookPath = u.EscapedPath()
		if b.webhookPath == "" || b.webhookPath == "/" {
			b.webhookPath = "/{$}"
		}
	}
	endpoint := c.APIEndpoint
	if endpoint == "" {
		endpoint = tgbotapi.APIEndpoint
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.callTimeout)
	defer cancel()
	api, err := tgbotapi.NewBotAPIWithClient(c.Token, endpoint, ctxClient{ctx, b.client})
	if err != nil {
		e := b.apiError("getMe", err)
		if e.Code == http.StatusUnauthorized || e.Code == http.StatusNotFound {
			b.closeIdle()
			return nil, fmt.Errorf("telegram.token_env: the Bot API refused the bot token: %s", e.Description)
		}
		b.log.Warn("Bot API unreachable at start; cards will wait and be sent when it answers", "err", e)
		api = &tgbotapi.BotAPI{Token: c.Token, Buffer: 100}
		api.SetAPIEndpoint(endpoint)
	} else {
		b.username = api.Self.UserName
	}
	api.Client = b.client
	b.api = api
	return b, nil
}

// Name says which messenger this is: "telegram".
func (b *Bot) Name() string { return Name }

// Routes mounts the webhook endpoint in webhook mode. In polling mode the
// adapter needs no route: it calls out, which works behind NAT.
func (b *Bot) Routes(s messenger.Router) {
	if b.webhookPath != "" {
		s.Handle("POST "+b.webhookPath, http.HandlerFunc(b.serveWebhook))
	}
}

// Run receives updates until ctx ends: by long polling, or by registering
// the webhook and letting Routes' handler receive them. It also registers
// the bot commands. Updates being handled when ctx ends are finished
// first, so a tap that reached us is never half-done.
func (b *Bot) Run(ctx context.Context) error {
	defer b.closeIdle()
	b.background(ctx, b.setup)
	if b.webhookPath != "" {
		b.background(ctx, b.registerWebhook)
		<-ctx.Done()
	} else {
		b.poll(ctx)
	}
	b.wg.Wait()
	return nil
}

// background runs f in a goroutine that Run waits for.
func (b *Bot) background(ctx context.Context, f func(context.Context)) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(ctx)
	}()
}

func (b *Bot) closeIdle() {
	if b.ownsClient {
		b.client.CloseIdleConnections()
	}
}

// isApprover is the one authorization check: telegram.approvers, by
// numeric user id (names and usernames can be changed by their owner).
func (b *Bot) isApprover(u *tgbotapi.User) bool {
	return u != nil && b.approvers[u.ID]
}

// isAdmin says whether u may revoke grants from Telegram
// (Config.Revokers), as only the web page's admins may there.
func (b *Bot) isAdmin(u *tgbotapi.User) bool {
	return u != nil && b.admins[u.ID]
}

// ctxClient gives the library's context-less calls a context, so that
// shutdown and timeouts cut them short.
type ctxClient struct {
	ctx   context.Context
	inner *http.Client
}

func (c ctxClient) Do(r *http.Request) (*http.Response, error) {
	return c.inner.Do(r.WithContext(c.ctx))
}

// bot returns a copy of the library client whose calls carry ctx. The
// BotAPI value holds no lock or per-call state, so a copy is cheap and safe.
func (b *Bot) bot(ctx context.Context) *tgbotapi.BotAPI {
	api := *b.api
	api.Client = ctxClient{ctx, b.client}
	return &api
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// backoff is the wait before retry n (1-based) of a setup or poll call:
// 1 s doubling to 30 s.
func backoff(n int) time.Duration {
	return min(time.Second<<min(n-1, 5), 30*time.Second)
}
