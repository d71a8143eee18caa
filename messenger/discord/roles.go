package discord

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// roleTTL is how long a member's roles are trusted before the guild's
// member is read again: a person who loses the role loses the right to
// decide within it.
const roleTTL = time.Minute

// roleCache holds members' roles, from the signed interaction they tapped
// with (member.roles) or from GET /guilds/{guild}/members/{user}.
type roleCache struct {
	mu sync.Mutex
	m  map[string]roleEntry
}

type roleEntry struct {
	roles []string
	at    time.Time
}

func (c *roleCache) put(user string, roles []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]roleEntry{}
	}
	c.m[user] = roleEntry{roles: slices.Clone(roles), at: time.Now()}
}

func (c *roleCache) get(user string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[user]
	if !ok || time.Since(e.at) > roleTTL {
		return nil, false
	}
	return e.roles, true
}

// IsGroup reports whether a route's Discord approver names a role
// ("discord:role:<id>") rather than a person.
func (m *Messenger) IsGroup(id string) bool { return strings.HasPrefix(id, "role:") }

// InGroup reports whether user holds the role now in discord.guild_id:
// from the roles of the interaction being handled, else read from the
// guild (https://discord.com/developers/docs/resources/guild#get-guild-member).
// An error admits nobody: the caller refuses the decision.
func (m *Messenger) InGroup(ctx context.Context, group, user string) (bool, error) {
	role, ok := strings.CutPrefix(group, "role:")
	if !ok || role == "" {
		return false, nil
	}
	roles, ok := m.roles.get(user)
	if !ok {
		mem, err := m.api.GuildMember(m.cfg.GuildID, user, discordgo.WithContext(ctx))
		if err != nil {
			return false, apiError("get guild member", err)
		}
		roles = mem.Roles
		m.roles.put(user, roles)
	}
	return slices.Contains(roles, role), nil
}
