// The keys every messenger's section has: who decides there, who may
// revoke grants there, and the language its people read.

package messenger

import (
	"strconv"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/locale"
)

// Chat is the part of a messenger's section that every chat has, ID
// being how the platform names a person (Telegram's numbers, Slack's
// and Discord's strings). A section embeds it, so its keys stand in the
// section's own table.
type Chat[ID comparable] struct {
	// Approvers are the ids of the people allowed to decide.
	Approvers []ID `toml:"approvers"`
	// Admins are the ids of the people allowed to revoke grants from the
	// chat (and to read its rules and audit), as the web page's admins.
	Admins []ID `toml:"admins"`
	// Language of cards, buttons, alerts and command answers: "en" (the
	// default) or "it".
	Language string `toml:"language"`
}

// chatSection is a messenger's section value: a pointer to its package's
// Config, which embeds a Chat.
type chatSection interface {
	config.Messenger
	ChatDefaults()
}

// ChatDefaults sets c's keys to their defaults: the catalogs' default
// language.
func (c *Chat[ID]) ChatDefaults() { c.Language = string(locale.DefaultLang) }

// Check reports a language the catalogs lack, no approvers in the
// section name when it is enabled, and every approver and admin that bad
// refuses, with what bad says of it ("bad user id …"; "" for a good id).
func (c Chat[ID]) Check(p config.Problems, name string, enabled bool, bad func(ID) string) {
	p.Language("language", c.Language)
	if enabled && len(c.Approvers) == 0 {
		p.Add("approvers", "required when %s is enabled (the user ids allowed to decide)", name)
	}
	for _, list := range []struct {
		key string
		ids []ID
	}{{"approvers", c.Approvers}, {"admins", c.Admins}} {
		for i, id := range list.ids {
			if why := bad(id); why != "" {
				p.Add(list.key+"["+strconv.Itoa(i)+"]", "%s", why)
			}
		}
	}
}
