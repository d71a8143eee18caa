package discord

import (
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// Kind registers Discord: the [discord] section and its adapter.
var Kind = messenger.Kind{Section: Section, Build: build}

// build makes the adapter's factory when cfg enables [discord].
func build(cfg config.Config, o messenger.Options) messenger.Factory {
	c := Of(cfg)
	if c == nil || !c.Enabled() {
		return nil
	}
	return Factory(*c, Options{Options: o})
}
