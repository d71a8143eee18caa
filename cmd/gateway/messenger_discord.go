package main

import (
	"log/slog"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/discord"
)

// discordMessenger builds the discord adapter when the config enables it.
func discordMessenger(cfg config.Config, log *slog.Logger) messenger.Factory {
	if !cfg.Discord.Enabled() {
		return nil
	}
	return discord.Factory(cfg.Discord, discord.Options{Options: messenger.Options{Logger: log, Location: cfg.Server.Zone(), PublicURL: cfg.Web.PublicURL, LinkBase: gateway.LinkBase(cfg)}})
}
