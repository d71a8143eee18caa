package telegram

import (
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// Kind registers Telegram: the [telegram] section and its adapter.
var Kind = messenger.Kind{Section: Section, Build: build}

// build makes the adapter's factory when cfg enables [telegram].
func build(cfg config.Config, o messenger.Options) messenger.Factory {
	tg := Of(cfg)
	if tg == nil || !tg.Enabled() {
		return nil
	}
	return Factory(Options{Config: *tg, Logger: o.Logger, GrantTTL: time.Duration(cfg.Policy.GrantTTL),
		Location: o.Location, PublicURL: o.PublicURL, LinkBase: o.LinkBase})
}
