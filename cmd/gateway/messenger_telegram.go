package main

import (
	"log/slog"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
)

// telegramMessenger builds the telegram adapter when the config enables it
// (telegram.token_env set), and returns nil otherwise.
func telegramMessenger(cfg config.Config, log *slog.Logger) messenger.Factory {
	if !cfg.Telegram.Enabled() {
		return nil
	}
	return telegram.Factory(telegram.Options{Config: cfg.Telegram, Logger: log, GrantTTL: time.Duration(cfg.Policy.GrantTTL),
		Location: cfg.Server.Zone(), PublicURL: cfg.Web.PublicURL, LinkBase: gateway.LinkBase(cfg)})
}
