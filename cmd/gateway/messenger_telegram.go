package main

import (
	"log/slog"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// telegramMessenger builds the telegram adapter when the config enables it.
func telegramMessenger(cfg config.Config, log *slog.Logger) gateway.MessengerFactory {
	return nil
}
