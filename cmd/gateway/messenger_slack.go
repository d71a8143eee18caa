package main

import (
	"log/slog"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// slackMessenger builds the slack adapter when the config enables it.
func slackMessenger(cfg config.Config, log *slog.Logger) gateway.MessengerFactory {
	return nil
}
