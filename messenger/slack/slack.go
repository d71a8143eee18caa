// Package slack is the gateway's Slack messenger (SPEC §8): it posts each
// pending request as a Block Kit card to slack.channel_id, edits the card
// when the request finishes (from whatever channel), and takes the
// approvers' clicks, the /approvals slash command and App Home opens either
// over HTTP (signed with the signing secret) or over Socket Mode.
//
// The approval flow above it does not know it is Slack: the Messenger is an
// approvals.Notifier, and the dispatcher in approvals owns retries, backoff
// and the persisted message refs ("channel:ts").
package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/messenger"
)

// Name is the messenger's name in agents[].notify and on cards.
const Name = "slack"

// Listing bounds: a Slack answer is meant to be read on a phone, and a Home
// view holds at most 100 blocks.
const (
	maxListed       = 20
	maxHomeGrants   = 30
	jobTimeout      = 30 * time.Second
	shutdownGrace   = 5 * time.Second
	homeDebounce    = 500 * time.Millisecond
	maxHomeWatchers = 200
)

// Options are the adapter's collaborators; all are optional. Its Dialer
// opens the Socket Mode WebSocket (default: slack-go's).
type Options struct {
	messenger.Options
}

// Messenger is the Slack adapter: a messenger.Messenger.
type Messenger struct {
	cfg     Config
	svc     *approvals.Service
	api     *slackapi.Client
	http    *http.Client
	log     *slog.Logger
	loc     locale.Locale // language, zone and clock of everything people read
	opts    Options
	apiHost *url.URL
	replays *messenger.Replays
	// team is the workspace the bot token belongs to (auth.test's
	// team_id), once known: requests from any other team are refused.
	team     atomic.Value // string
	approver map[string]bool
	admin    map[string]bool
	groups   groupCache // members of the user groups routes name

	jobs *messenger.Jobs // work after Slack was answered

	homeMu    sync.Mutex
	homeUsers []string // who opened the Home tab, most recent last
}

var _ messenger.Messenger = (*Messenger)(nil)

// card is the neutral card of r, linked to its web page.
func (m *Messenger) card(r approvals.Request) cards.Card { return m.opts.Card(r, m.loc) }

// Factory returns the messenger.Factory that builds the adapter
// once the approvals service exists.
func Factory(cfg Config, o Options) messenger.Factory {
	return func(svc *approvals.Service, host messenger.Host) (messenger.Messenger, error) {
		o.Options = o.FromHost(host)
		return New(svc, cfg, o)
	}
}

// New builds the adapter. It makes no call to Slack: a bad token shows up
// as failed sends (retried, logged) or, in Socket Mode, as Run's error.
func New(svc *approvals.Service, cfg Config, o Options) (*Messenger, error) {
	if cfg.BotToken == "" {
		return nil, errors.New("slack.bot_token_env: the bot token is empty")
	}
	if cfg.ChannelID == "" {
		return nil, errors.New("slack.channel_id: required (the channel cards are posted to)")
	}
	if cfg.SigningSecret == "" && cfg.AppToken == "" {
		return nil, errors.New("slack.signing_secret_env: required unless slack.app_token_env is set (Socket Mode)")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://slack.com/api/"
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		return nil, fmt.Errorf("slack.api_url: %q must end with \"/\"", cfg.APIURL)
	}
	apiHost, err := url.Parse(cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("slack.api_url: %v", err)
	}
	o.Options = o.WithDefaults()
	m := &Messenger{
		cfg: cfg, svc: svc, http: o.HTTPClient, log: o.Logger.With("channel", Name), opts: o,
		loc:      locale.New(locale.Lang(cfg.Language), o.Location, o.Now),
		apiHost:  apiHost,
		approver: messenger.Set(cfg.Approvers), admin: messenger.Set(cfg.Admins),
	}
	m.api = m.client(false)
	m.replays = messenger.NewReplays(svc.DB(), Name, messenger.ReplayTTL, time.Now, m.log)
	m.jobs = messenger.NewJobs(m.log, jobTimeout)
	return m, nil
}

// client builds a slack-go client on our HTTP client; withAppToken adds
// the app-level token Socket Mode opens its connection with.
func (m *Messenger) client(withAppToken bool) *slackapi.Client {
	opts := []slackapi.Option{
		slackapi.OptionAPIURL(m.cfg.APIURL),
		slackapi.OptionHTTPClient(m.http),
		slackapi.OptionLog(log.New(io.Discard, "", 0)), // debug is off; keep stray lines out of stderr
	}
	if withAppToken {
		opts = append(opts, slackapi.OptionAppLevelToken(m.cfg.AppToken))
	}
	return slackapi.New(m.cfg.BotToken, opts...)
}

// Name is "slack", the name agents list in notify.
func (m *Messenger) Name() string { return Name }

// Post sends the card of a pending request to slack.channel_id
// (https://docs.slack.dev/reference/methods/chat.postMessage). The ref is
// "channel:ts", which chat.update needs; the dispatcher persists it.
func (m *Messenger) Post(ctx context.Context, r approvals.Request) (string, error) {
	msg := Slack(m.card(r))
	ch, ts, err := m.api.PostMessageContext(ctx, m.cfg.ChannelID,
		slackapi.MsgOptionText(msg.Text, false), slackapi.MsgOptionDisableMarkdown(), slackapi.MsgOptionBlocks(msg.Blocks...))
	if err != nil {
		return "", apiError("chat.postMessage", err)
	}
	m.log.Debug("card posted", "request_id", r.ID, "chat_id", ch, "ts", ts)
	return ch + ":" + ts, nil
}

// Summarize posts, in the cards' channel, how many requests of each agent
// wait without a card of their own (past its cards_per_minute), with the
// web page's link: one message, as plain text (no mrkdwn, no mentions).
func (m *Messenger) Summarize(ctx context.Context, waiting []approvals.Waiting) error {
	text := cards.WaitingSummary(waiting, m.opts.PublicURL, m.loc)
	if _, _, err := m.api.PostMessageContext(ctx, m.cfg.ChannelID, slackapi.MsgOptionText(text, false),
		slackapi.MsgOptionDisableMarkdown()); err != nil {
		return apiError("chat.postMessage", err)
	}
	return nil
}

// Announce posts a notification of [[policy.notify]] to slack.channel_id
// (https://docs.slack.dev/reference/methods/chat.postMessage): plain
// text, no blocks, no buttons. One attempt: the service retries.
func (m *Messenger) Announce(ctx context.Context, n approvals.Notification) error {
	_, _, err := m.api.PostMessageContext(ctx, m.cfg.ChannelID,
		slackapi.MsgOptionText(cards.NewNotification(n.Request, m.loc).Render(m.loc, SlackMarkup), false),
		slackapi.MsgOptionDisableMarkdown())
	if err != nil {
		return apiError("chat.postMessage", err)
	}
	return nil
}

// SendDigest posts the daily digest ([approvals] digest) to the channel:
// a plain message, no buttons.
func (m *Messenger) SendDigest(ctx context.Context, d approvals.Digest) error {
	_, _, err := m.api.PostMessageContext(ctx, m.cfg.ChannelID,
		slackapi.MsgOptionText(cards.NewDigest(d, m.loc).Render(m.loc, SlackMarkup), false),
		slackapi.MsgOptionDisableMarkdown())
	if err != nil {
		return apiError("chat.postMessage", err)
	}
	return nil
}

// SendBulletin posts a bulletin (a passkey added or removed) to the
// channel: a plain message, no buttons.
func (m *Messenger) SendBulletin(ctx context.Context, b approvals.Bulletin) error {
	_, _, err := m.api.PostMessageContext(ctx, m.cfg.ChannelID,
		slackapi.MsgOptionText(cards.NewBulletin(b, m.loc).Render(SlackMarkup), false),
		slackapi.MsgOptionDisableMarkdown())
	if err != nil {
		return apiError("chat.postMessage", err)
	}
	return nil
}

// Update re-renders the card of r in place
// (https://docs.slack.dev/reference/methods/chat.update): finished cards
// lose their buttons and show the outcome.
func (m *Messenger) Update(ctx context.Context, r approvals.Request, ref string) error {
	ch, ts, ok := strings.Cut(ref, ":")
	if !ok || ch == "" || ts == "" {
		m.log.Error("card ref is not channel:ts; not retrying", "request_id", r.ID, "ref", ref)
		return nil
	}
	msg := Slack(m.card(r))
	_, _, _, err := m.api.UpdateMessageContext(ctx, ch, ts,
		slackapi.MsgOptionText(msg.Text, false), slackapi.MsgOptionDisableMarkdown(), slackapi.MsgOptionBlocks(msg.Blocks...))
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && (se.Err == "message_not_found" || se.Err == "cant_update_message") {
		// Someone deleted the card; retrying cannot bring it back.
		m.log.Warn("card gone; not updating it", "request_id", r.ID, "chat_id", ch, "err", se.Err)
		return nil
	}
	if err != nil {
		return apiError("chat.update", err)
	}
	return nil
}

func apiError(method string, err error) error {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return &messenger.RateLimited{Messenger: Name, Call: method, Wait: rl.RetryAfter}
	}
	return fmt.Errorf("slack %s: %w", method, err)
}

// Routes mounts the HTTP endpoints when a signing secret is configured; in
// Socket Mode without one, Slack talks to us over the WebSocket only.
func (m *Messenger) Routes(s messenger.Router) {
	if m.cfg.SigningSecret == "" {
		return
	}
	s.Handle("POST /slack/interactions", http.HandlerFunc(m.interactions))
	s.Handle("POST /slack/commands", http.HandlerFunc(m.commands))
	s.Handle("POST /slack/events", http.HandlerFunc(m.events))
}

// Run keeps the App Home tabs fresh and, in Socket Mode, holds the
// WebSocket open. It returns when ctx ends (after the work already
// acknowledged is done), or with an error when Slack refuses our tokens.
func (m *Messenger) Run(ctx context.Context) error {
	defer m.shutdown()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.refreshHomes(ctx)
	}()
	m.checkAuth(ctx)
	var err error
	if m.cfg.AppToken != "" {
		err = m.runSocketMode(ctx)
	} else {
		<-ctx.Done()
	}
	cancel() // Socket Mode may stop on its own (a refused token): stop the rest too
	wg.Wait()
	return err
}

// checkAuth asks Slack who the bot token belongs to
// (https://docs.slack.dev/reference/methods/auth.test), so a wrong token is
// named in the log at start-up rather than only in the first failed post.
// Best effort: cards are retried anyway, and Slack may just be unreachable.
func (m *Messenger) checkAuth(ctx context.Context) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	who, err := m.api.AuthTestContext(actx)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Error("slack bot token check failed (auth.test); cards will be retried: check slack.bot_token_env",
				"err", err)
		}
		return
	}
	m.team.Store(who.TeamID)
	m.log.Info("slack ready", "team_id", who.TeamID, "bot_user_id", who.UserID, "chat_id", m.cfg.ChannelID,
		"socket_mode", m.cfg.AppToken != "")
}

// ourTeam says whether team is the bot's own workspace. Until auth.test
// has answered it asks now; when the team cannot be known, nothing from
// Slack is acted on (fail closed).
func (m *Messenger) ourTeam(ctx context.Context, team string) bool {
	want, _ := m.team.Load().(string)
	if want == "" {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		who, err := m.api.AuthTestContext(actx)
		cancel()
		if err != nil || who.TeamID == "" {
			m.log.Error("refused a Slack request: the bot's team is not known (auth.test failed)", "err", err)
			return false
		}
		m.team.Store(who.TeamID)
		want = who.TeamID
	}
	if team != want {
		m.log.Warn("refused a Slack request from another team", "team_id", fmt.Sprintf("%.32q", team))
		return false
	}
	return true
}

// goJob runs work after Slack has been answered: Slack wants an answer
// within 3 seconds, and a decision or a listing may take longer under load.
// Jobs are tracked so shutdown waits for them.
func (m *Messenger) goJob(work func(ctx context.Context)) { m.jobs.Go(work) }

// shutdown lets acknowledged work finish for a few seconds, then cancels
// what is left, and drops idle connections (see messenger.Jobs.Drain).
func (m *Messenger) shutdown() {
	m.jobs.Drain(shutdownGrace)
	m.http.CloseIdleConnections()
}
