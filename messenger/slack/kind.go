package slack

import (
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// Kind registers Slack: the [slack] section and its adapter.
var Kind = messenger.KindOf(Section, func(_ config.Config, c *Config, o messenger.Options) messenger.Factory {
	return Factory(*c, Options{Options: o})
})
