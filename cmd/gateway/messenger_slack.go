package main

import (
	"log/slog"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/slack"
)

// slackMessenger builds the slack adapter when the config enables it.
func slackMessenger(cfg config.Config, log *slog.Logger) messenger.Factory {
	if !cfg.Slack.Enabled() {
		return nil
	}
	return slack.Factory(cfg.Slack, slack.Options{Options: messenger.Options{Logger: log, Location: cfg.Server.Zone(), PublicURL: cfg.Web.PublicURL, LinkBase: gateway.LinkBase(cfg)}})
}
