package telegram

import (
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// Kind registers Telegram: the [telegram] section and its adapter.
var Kind = messenger.KindOf(Section, func(cfg config.Config, tg *Config, o messenger.Options) messenger.Factory {
	return Factory(Options{Config: *tg, Logger: o.Logger, GrantTTL: time.Duration(cfg.Policy.GrantTTL),
		Location: o.Location, PublicURL: o.PublicURL, LinkBase: o.LinkBase})
})
