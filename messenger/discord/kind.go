package discord

import (
	_ "embed"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

//go:embed example.toml
var example string

// Kind registers Discord: the [discord] section, holding its defaults, and its
// adapter, built when the config enables it; Of is a config's [discord],
// nil when it is not registered.
var Kind, Of = messenger.Register(Name, example, func() *Config { return &Config{APIURL: DefaultAPIURL, Mode: ModeGateway} },
	func(_ config.Config, c *Config, o messenger.Options) messenger.Factory {
		return Factory(*c, Options{Options: o})
	})

// Section is [discord], as config.LoadOptions takes it.
var Section = Kind.Section
