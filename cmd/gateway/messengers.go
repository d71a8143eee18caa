package main

import (
	"log/slog"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/discord"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/telegram"
)

// messengerKinds are the messengers this binary speaks, one line each:
// a messenger's package owns its config section and its adapter, and
// adding one is its package and its line here.
var messengerKinds = []messenger.Kind{
	telegram.Kind,
	slack.Kind,
	discord.Kind,
}

// messengers returns the factories of the messengers the config enables.
func messengers(cfg config.Config, log *slog.Logger) []messenger.Factory {
	o := messenger.Options{Logger: log, Location: cfg.Server.Zone(), PublicURL: cfg.Web.PublicURL, LinkBase: gateway.LinkBase(cfg)}
	var out []messenger.Factory
	for _, k := range messengerKinds {
		if f := k.Build(cfg, o); f != nil {
			out = append(out, f)
		}
	}
	return out
}
