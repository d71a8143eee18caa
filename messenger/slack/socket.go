package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// fatalSocketErrors are the apps.connections.open answers no retry can
// fix: the app-level token is wrong, revoked, or not an app-level token.
var fatalSocketErrors = map[string]bool{
	"invalid_auth": true, "token_revoked": true, "token_expired": true, "account_inactive": true,
	"not_authed": true, "not_allowed_token_type": true, "missing_scope": true,
}

func fatalCode(err error) string {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && fatalSocketErrors[se.Err] {
		return se.Err
	}
	if err != nil && fatalSocketErrors[err.Error()] {
		return err.Error()
	}
	var sc slackapi.StatusCodeError
	if errors.As(err, &sc) && sc.Code == 404 {
		return "invalid_auth" // slack-go's own reading of a 404 from apps.connections.open
	}
	return ""
}

// ErrSocketAuth is returned by Run when Slack refuses the app-level token:
// Socket Mode cannot work until someone fixes the configuration.
var ErrSocketAuth = errors.New("slack socket mode: Slack refused the app-level token")

func socketAuthError(code string) error {
	return fmt.Errorf("%w (%s): check slack.app_token_env — it must hold an app-level token (xapp-…) "+
		"with the connections:write scope, and the app must not be uninstalled", ErrSocketAuth, code)
}

// runSocketMode holds the Socket Mode connection
// (https://docs.slack.dev/apis/events-api/using-socket-mode) until ctx ends.
// slack-go reconnects by itself when Slack asks or the connection drops;
// when its run loop gives up anyway we start it again with backoff. A token
// Slack refuses stops everything with ErrSocketAuth.
func (m *Messenger) runSocketMode(parent context.Context) error {
	opts := []socketmode.Option{socketmode.OptionLog(log.New(io.Discard, "", 0))}
	if m.opts.Dialer != nil {
		opts = append(opts, socketmode.OptionDialer(m.opts.Dialer))
	}
	smc := socketmode.New(m.client(true), opts...)
	ctx, cancel := context.WithCancel(parent)
	fatal := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.socketEvents(ctx, smc, func(err error) {
			select {
			case fatal <- err:
			default:
			}
			cancel()
		})
	}()
	stop := func(err error) error {
		cancel()
		wg.Wait()
		return err
	}
	backoff := m.opts.Backoff
	for {
		started := time.Now()
		err := smc.RunContext(ctx)
		select {
		case ferr := <-fatal:
			return stop(ferr)
		default:
		}
		if parent.Err() != nil {
			return stop(nil)
		}
		if code := fatalCode(err); code != "" {
			return stop(socketAuthError(code))
		}
		if time.Since(started) > time.Minute {
			backoff = m.opts.Backoff // it ran fine for a while: start the backoff over
		}
		m.log.Warn("socket mode stopped; reconnecting", "err", err, "retry_in", backoff.String())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return stop(nil)
		case <-t.C:
		}
		backoff = min(backoff*2, time.Minute)
	}
}

// socketEvents reads what the Socket Mode client delivers. Every envelope
// is acknowledged first (Slack wants that within 3 seconds, and resends
// otherwise), then deduplicated, then handled in a job.
func (m *Messenger) socketEvents(ctx context.Context, smc *socketmode.Client, fail func(error)) {
	ack := func(envelopeID string) {
		if envelopeID == "" {
			return
		}
		if err := smc.AckCtx(ctx, envelopeID, nil); err != nil && ctx.Err() == nil {
			m.log.Warn("socket mode: ack failed", "envelope_id", envelopeID, "err", err)
		}
	}
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return
		case evt = <-smc.Events:
		}
		envelope := ""
		if evt.Request != nil {
			envelope = evt.Request.EnvelopeID
		}
		switch evt.Type {
		case socketmode.EventTypeConnected:
			m.log.Info("socket mode connected")
		case socketmode.EventTypeConnectionError:
			if ce, ok := evt.Data.(*slackapi.ConnectionErrorEvent); ok {
				if code := fatalCode(ce.ErrorObj); code != "" {
					fail(socketAuthError(code))
					return
				}
				m.log.Warn("socket mode: connection failed; retrying", "attempt", ce.Attempt,
					"retry_in", ce.Backoff.String(), "err", ce.ErrorObj)
			}
		case socketmode.EventTypeInvalidAuth:
			fail(socketAuthError("invalid_auth"))
			return
		case socketmode.EventTypeInteractive:
			ack(envelope)
			ic, ok := evt.Data.(slackapi.InteractionCallback)
			if ok && m.replays.FirstTime(ctx, envKey(envelope), interactionKey(ic)) {
				m.goJob(func(ctx context.Context) { m.handleInteraction(ctx, ic) })
			}
		case socketmode.EventTypeSlashCommand:
			ack(envelope)
			cmd, ok := evt.Data.(slackapi.SlashCommand)
			if ok && m.replays.FirstTime(ctx, envKey(envelope), commandKey(cmd)) {
				m.goJob(func(ctx context.Context) { m.handleCommand(ctx, cmd) })
			}
		case socketmode.EventTypeEventsAPI:
			ack(envelope)
			ev, _ := evt.Data.(slackevents.EventsAPIEvent)
			cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
			if ok && cb.InnerEvent != nil && m.replays.FirstTime(ctx, envKey(envelope), eventKey(cb.EventID)) &&
				m.ourTeam(ctx, cb.TeamID) {
				m.handleEvent(*cb.InnerEvent)
			}
		case socketmode.EventTypeErrorBadMessage:
			// An envelope slack-go could not parse: still acknowledge it, or
			// Slack keeps resending it.
			if bm, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
				var env struct {
					EnvelopeID string `json:"envelope_id"`
				}
				_ = json.Unmarshal(bm.Message, &env)
				ack(env.EnvelopeID)
				m.log.Warn("socket mode: unreadable envelope", "err", bm.Cause)
			}
		case socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
			m.log.Debug("socket mode: transient error", "type", string(evt.Type))
		}
	}
}

func envKey(id string) string {
	if id == "" {
		return ""
	}
	return "envelope|" + id
}
