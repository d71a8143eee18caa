package discord

import (
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// Kind registers Discord: the [discord] section and its adapter, built
// when the config enables it.
var Kind = messenger.KindOf(Section, func(_ config.Config, c *Config, o messenger.Options) messenger.Factory {
	return Factory(*c, Options{Options: o})
})
