package telegram

import (
	_ "embed"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

//go:embed example.toml
var example string

// Kind registers Telegram: the [telegram] section, holding its defaults, and its
// adapter, built when the config enables it; Of is a config's [telegram],
// nil when it is not registered.
var Kind, Of = messenger.Register(Name, example, func() *Config { return &Config{APIEndpoint: DefaultAPIEndpoint} },
	func(cfg config.Config, tg *Config, o messenger.Options) messenger.Factory {
		return Factory(Options{Config: *tg, Logger: o.Logger, GrantTTL: time.Duration(cfg.Policy.GrantTTL),
			Location: o.Location, PublicURL: o.PublicURL, LinkBase: o.LinkBase})
	})

// Section is [telegram], as config.LoadOptions takes it.
var Section = Kind.Section
