package discord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// maxBackoff bounds the pause between attempts to open the websocket.
const maxBackoff = time.Minute

// Close codes after which opening again cannot help
// (https://discord.com/developers/docs/topics/opcodes-and-status-codes#gateway-gateway-close-event-codes).
var fatalClose = map[int]string{
	4004: "authentication failed: check discord.token_env",
	4010: "invalid shard", 4011: "sharding required",
	4012: "invalid API version", 4013: "invalid intents", 4014: "disallowed intents",
}

// runGateway holds the websocket open until ctx ends
// (https://discord.com/developers/docs/events/gateway). discordgo
// identifies, heartbeats, and resumes a session it already has when it is
// opened again; its own reconnect loop is off, because it cannot be
// stopped: this loop opens again after every drop (a RECONNECT, a missed
// heartbeat ACK, a network failure), at once the first time, then with
// backoff and jitter. A RESUME gets the dispatches missed meanwhile,
// taps included.
func (m *Messenger) runGateway(ctx context.Context) error {
	lost := make(chan struct{}, 1)
	removers := []func(){
		m.api.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) {
			m.goJob(func(ctx context.Context) { m.onInteraction(ctx, ic.Interaction) })
		}),
		m.api.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			select {
			case lost <- struct{}{}:
			default:
			}
		}),
		m.api.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			m.log.Info("discord ready (gateway)", "session", "identified", "chat_id", m.cfg.ChannelID, "guild_id", m.cfg.GuildID)
		}),
		m.api.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
			m.log.Info("discord gateway session resumed")
		}),
	}
	defer func() {
		for _, rm := range removers {
			rm()
		}
	}()
	wait := time.Duration(0)
	for {
		if wait > 0 {
			t := time.NewTimer(wait + rand.N(wait/2+1))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		err := m.api.Open()
		var ce *websocket.CloseError
		if errors.As(err, &ce) && fatalClose[ce.Code] != "" {
			return fmt.Errorf("discord gateway: %s (close %d)", fatalClose[ce.Code], ce.Code)
		}
		if err != nil && !errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			if ctx.Err() != nil {
				return nil
			}
			wait = min(max(2*wait, m.opts.Backoff), maxBackoff)
			m.log.Warn("discord gateway: could not connect; trying again", "err", err, "in", wait)
			continue
		}
		select {
		case <-ctx.Done():
			_ = m.api.Close()
			return nil
		case <-lost:
			// The first reopen after a working connection goes at once.
			wait = 0
			m.log.Warn("discord gateway connection lost; resuming")
		}
	}
}

// onInteraction answers an interaction that came over the websocket with
// its callback (https://discord.com/developers/docs/interactions/receiving-and-responding#create-interaction-response),
// then does the work that follows.
func (m *Messenger) onInteraction(ctx context.Context, i *discordgo.Interaction) {
	rp := m.handle(ctx, i)
	if err := m.api.InteractionRespond(i, rp.resp, discordgo.WithContext(ctx)); err != nil {
		m.log.Warn("could not answer a Discord interaction", "interaction_id", i.ID, "err", err)
		return
	}
	if rp.after != nil {
		rp.after(ctx)
	}
}
