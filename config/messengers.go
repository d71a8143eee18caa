// The messengers: registered sections that are chats a person decides
// in. Config names none of them; each is its own package's section, and
// the checks that span the tables (a route's approvers and notify, an
// agent's notify, a notify pattern's deliveries, the digest) ask the
// registered ones.

package config

import (
	"fmt"
	"strings"
)

// Messenger is a registered section that is a chat: a place cards go
// (agents[].notify, a route's notify and escalate_to, [[policy.notify]]
// deliveries), whose people may be a route's approvers as "name:user"
// ("chat:u1"), and which can post the digest. Its section's
// name is the channel's name.
type Messenger interface {
	Section
	// Enabled reports whether the section is configured (its token set).
	Enabled() bool
	// EnableKey is the key that enables it ("token_env"), which "… is not
	// configured (set chat.token_env)" names.
	EnableKey() string
	// ApproverExample is a user as a route's approvers name one
	// ("u1", read "chat:u1").
	ApproverExample() string
	// CheckApprover checks the user of a route's approver "name:user".
	// group reports a user that stands for many (a user group, a role),
	// so that a quorum above the list's length may still be reached.
	CheckApprover(user string) (group bool, err error)
}

// Messengers are the names of the registered sections that are
// messengers, in registration order.
func (c Config) Messengers() []string {
	var out []string
	for _, s := range c.sections {
		if _, ok := s.value.(Messenger); ok {
			out = append(out, s.name)
		}
	}
	return out
}

// Messenger is the registered messenger name, nil when none is.
func (c Config) Messenger(name string) Messenger {
	m, _ := c.Section(name).(Messenger)
	return m
}

// MessengerEnabled reports whether the messenger name is registered and
// configured.
func (c Config) MessengerEnabled(name string) bool {
	m := c.Messenger(name)
	return m != nil && m.Enabled()
}

// enabledMessengers maps every registered messenger to whether it is
// configured, as policy.CheckNotify takes it.
func (c Config) enabledMessengers() map[string]bool {
	out := map[string]bool{}
	for _, name := range c.Messengers() {
		out[name] = c.MessengerEnabled(name)
	}
	return out
}

// notConfigured is the problem of a channel named where it is not
// configured.
func notConfigured(name string, m Messenger) string {
	return fmt.Sprintf("%s is not configured (set %s.%s)", name, name, m.EnableKey())
}

// orList reads "a, b or c" ("a" alone, "" for none).
func orList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
