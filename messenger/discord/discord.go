// Package discord is the gateway's Discord messenger: it posts each
// pending request as a message with buttons to discord.channel_id, edits
// it when the request finishes (from whatever channel), and takes the
// approvers' taps and the /approvals slash command either over Discord's
// websocket gateway (the default: no public URL needed) or on the HTTP
// interactions endpoint /discord/interactions (verified with the
// application's Ed25519 public key).
//
// It speaks Discord through github.com/bwmarrin/discordgo. The approval
// flow above it does not know it is Discord: the Messenger is an
// approvals.Notifier, and the dispatcher in approvals owns retries,
// backoff, Discord's 429 retry_after and the persisted message refs
// ("channel:message").
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger"
)

// Name is the messenger's name in agents[].notify and on cards.
const Name = "discord"

const (
	maxListed     = 20
	jobTimeout    = 30 * time.Second
	shutdownGrace = 5 * time.Second
)

// Options are the adapter's collaborators; all are optional. Its Dialer
// opens the gateway websocket (default: gorilla's).
type Options struct {
	messenger.Options
}

// Messenger is the Discord adapter: a messenger.Messenger.
type Messenger struct {
	cfg     Config
	svc     *approvals.Service
	api     *discordgo.Session
	http    *http.Client
	log     *slog.Logger
	loc     locale.Locale
	opts    Options
	pubKey  []byte
	replays *messenger.Replays

	approver map[string]bool
	admin    map[string]bool
	roles    roleCache

	jobs *messenger.Jobs // work after an interaction was answered
}

var (
	_ messenger.Messenger     = (*Messenger)(nil)
	_ approvals.Announcer     = (*Messenger)(nil)
	_ approvals.Reminder      = (*Messenger)(nil)
	_ approvals.Summarizer    = (*Messenger)(nil)
	_ approvals.GroupResolver = (*Messenger)(nil)
	_ approvals.DigestSender  = (*Messenger)(nil)
)

// Factory returns the messenger.Factory that builds the adapter
// once the approvals service exists.
func Factory(cfg Config, o Options) messenger.Factory {
	return func(svc *approvals.Service, host messenger.Host) (messenger.Messenger, error) {
		o.Options = o.FromHost(host)
		return New(svc, cfg, o)
	}
}

// New builds the adapter. It makes no call to Discord: a bad token shows
// up as failed sends (retried, logged) and as Run's error.
func New(svc *approvals.Service, cfg Config, o Options) (*Messenger, error) {
	switch {
	case cfg.Token == "":
		return nil, errors.New("discord.token_env: the bot token is empty")
	case cfg.ChannelID == "" || cfg.GuildID == "" || cfg.ApplicationID == "":
		return nil, errors.New("discord.application_id, guild_id and channel_id are required")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://discord.com/api/v10"
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeGateway
	}
	var pub []byte
	if cfg.HTTPMode() {
		k, err := parsePublicKey(cfg.PublicKey)
		if err != nil {
			return nil, err
		}
		pub = k
	}
	o.Options = o.WithDefaults()
	rest, err := newREST(cfg.APIURL, o.HTTPClient)
	if err != nil {
		return nil, err
	}
	api, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	api.Client = rest
	// 429s go back to the dispatcher (approvals.RetryAfterError), which
	// holds the whole channel for retry_after: one limiter, not two.
	api.ShouldRetryOnRateLimit = false
	api.MaxRestRetries = 0
	api.ShouldReconnectOnError = false // Run reopens, with backoff and a context
	api.StateEnabled = false
	api.Identify.Intents = discordgo.IntentsGuilds // interactions need no privileged intent
	api.LogLevel = -1                              // discordgo logs nothing; errors come back to us
	if o.Dialer != nil {
		api.Dialer = o.Dialer
	}
	m := &Messenger{
		cfg: cfg, svc: svc, api: api, http: o.HTTPClient, log: o.Logger.With("channel", Name), opts: o,
		loc:    locale.New(locale.Lang(cfg.Language), o.Location, o.Now),
		pubKey: pub, approver: messenger.Set(cfg.Approvers), admin: messenger.Set(cfg.Admins),
	}
	m.replays = messenger.NewReplays(svc.DB(), Name, messenger.ReplayTTL, time.Now, m.log)
	m.jobs = messenger.NewJobs(m.log, jobTimeout)
	return m, nil
}

// Name is "discord", the name agents list in notify.
func (m *Messenger) Name() string { return Name }

// card is the neutral card of r, linked to its web page.
func (m *Messenger) card(r approvals.Request) cards.Card { return m.opts.Card(r, m.loc) }

// noMentions is allowed_mentions {"parse": []}: whatever a message says,
// Discord notifies nobody. Every message the adapter writes carries it.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// Post sends the card of a pending request to discord.channel_id
// (https://discord.com/developers/docs/resources/message#create-message).
// The ref is "channel:message", which the edit needs; the dispatcher
// persists it.
func (m *Messenger) Post(ctx context.Context, r approvals.Request) (string, error) {
	msg := Discord(m.card(r))
	sent, err := m.api.ChannelMessageSendComplex(m.cfg.ChannelID, &discordgo.MessageSend{
		Content: msg.Content, Components: msg.Components, AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	if err != nil {
		return "", apiError("create message", err)
	}
	m.log.Debug("card posted", "request_id", r.ID, "message_id", sent.ID)
	return m.cfg.ChannelID + ":" + sent.ID, nil
}

// Update re-renders the card of r in place
// (https://discord.com/developers/docs/resources/message#edit-message):
// a finished card loses its buttons and shows the outcome.
func (m *Messenger) Update(ctx context.Context, r approvals.Request, ref string) error {
	ch, id, ok := strings.Cut(ref, ":")
	if !ok || ch == "" || id == "" {
		m.log.Error("card ref is not channel:message; not retrying", "request_id", r.ID, "ref", ref)
		return nil
	}
	err := m.edit(ctx, ch, id, Discord(m.card(r)))
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusNotFound {
		m.log.Warn("card gone; not updating it", "request_id", r.ID, "message_id", id)
		return nil
	}
	if err != nil {
		return apiError("edit message", err)
	}
	return nil
}

func (m *Messenger) edit(ctx context.Context, channel, id string, msg DiscordMessage) error {
	_, err := m.api.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID: id, Channel: channel, Content: &msg.Content, Components: &msg.Components, AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	return err
}

// say posts plain text (already escaped) to the cards' channel, as a
// reply to message when it is set.
func (m *Messenger) say(ctx context.Context, text, replyTo string) error {
	send := &discordgo.MessageSend{Content: DiscordText(text), AllowedMentions: noMentions()}
	if replyTo != "" {
		send.Reference = &discordgo.MessageReference{MessageID: replyTo, ChannelID: m.cfg.ChannelID, GuildID: m.cfg.GuildID}
	}
	_, err := m.api.ChannelMessageSendComplex(m.cfg.ChannelID, send, discordgo.WithContext(ctx))
	if err != nil {
		return apiError("create message", err)
	}
	return nil
}

// Summarize posts how many requests of each agent wait without a card of
// their own (past its cards_per_minute), with the web page's link.
func (m *Messenger) Summarize(ctx context.Context, waiting []approvals.Waiting) error {
	return m.say(ctx, EscapeDiscord(cards.WaitingSummary(waiting, m.opts.PublicURL, m.loc)), "")
}

// Announce posts a notification of [[policy.notify]]: plain text, no
// buttons. One attempt: the service retries.
func (m *Messenger) Announce(ctx context.Context, n approvals.Notification) error {
	return m.say(ctx, EscapeDiscord(cards.NewNotification(n.Request, m.loc).Text(m.loc)), "")
}

// SendDigest posts the daily digest ([approvals] digest) to the cards'
// channel: a plain message, no buttons.
func (m *Messenger) SendDigest(ctx context.Context, d approvals.Digest) error {
	return m.say(ctx, DiscordText(cards.NewDigest(d, m.loc).Render(m.loc, DiscordMarkup)), "")
}

// SendBulletin posts a bulletin (a passkey added or removed) to the cards'
// channel: a plain message, no buttons.
func (m *Messenger) SendBulletin(ctx context.Context, b approvals.Bulletin) error {
	return m.say(ctx, DiscordText(cards.NewBulletin(b, m.loc).Render(DiscordMarkup)), "")
}

// Remind posts a short reminder of a pending request in reply to its card.
func (m *Messenger) Remind(ctx context.Context, r approvals.Request, ref string) error {
	_, id, ok := strings.Cut(ref, ":")
	if !ok || id == "" {
		return nil
	}
	return m.say(ctx, EscapeDiscord(cards.Reminder(r, m.loc)), id)
}

func apiError(call string, err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		return &messenger.RateLimited{Messenger: Name, Call: call, Wait: max(rl.RetryAfter, 100*time.Millisecond)}
	}
	return fmt.Errorf("discord %s: %w", call, err)
}

// Routes mounts /discord/interactions in HTTP mode; in gateway mode
// Discord talks to us over the websocket only.
func (m *Messenger) Routes(s messenger.Router) {
	if m.cfg.HTTPMode() {
		s.Handle("POST /discord/interactions", http.HandlerFunc(m.interactions))
	}
}

// Run registers the slash commands and, in gateway mode, holds the
// websocket open. It returns when ctx ends (after the work already
// acknowledged is done), or with an error when Discord refuses the token.
func (m *Messenger) Run(ctx context.Context) error {
	defer m.shutdown()
	m.registerCommands(ctx)
	if !m.cfg.HTTPMode() {
		return m.runGateway(ctx)
	}
	m.log.Info("discord ready (HTTP interactions)", "chat_id", m.cfg.ChannelID, "guild_id", m.cfg.GuildID)
	<-ctx.Done()
	return nil
}

// goJob runs work after Discord has been answered (it wants an answer
// within 3 s).
func (m *Messenger) goJob(work func(ctx context.Context)) { m.jobs.Go(work) }

// shutdown lets acknowledged work finish for a few seconds, cancels what
// is left, and drops idle connections.
func (m *Messenger) shutdown() {
	m.jobs.Drain(shutdownGrace)
	m.http.CloseIdleConnections()
}
