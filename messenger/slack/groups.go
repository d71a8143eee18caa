package slack

import (
	"context"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/messenger"
)

// groupTTL is how long the members of a user group are trusted before
// usergroups.users.list is asked again: a person removed from the group
// in Slack loses the right to decide within it.
const groupTTL = time.Minute

// groupCache holds the members of the user groups routes name.
type groupCache struct {
	mu sync.Mutex
	m  map[string]groupEntry
}

type groupEntry struct {
	members map[string]bool
	at      time.Time
}

var _ approvals.GroupResolver = (*Messenger)(nil)
var _ approvals.Reminder = (*Messenger)(nil)
var (
	_ approvals.Announcer    = (*Messenger)(nil)
	_ approvals.DigestSender = (*Messenger)(nil)
)

// IsGroup reports whether a Slack id names a user group (S…) rather than
// a member (U…, W…).
func (m *Messenger) IsGroup(id string) bool { return strings.HasPrefix(id, "S") }

// InGroup reports whether user is a member of the user group now, read
// with usergroups.users.list
// (https://docs.slack.dev/reference/methods/usergroups.users.list; the bot
// token needs the usergroups:read scope) and kept for groupTTL. An error
// admits nobody: the caller refuses the decision.
func (m *Messenger) InGroup(ctx context.Context, group, user string) (bool, error) {
	now := time.Now()
	m.groups.mu.Lock()
	e, ok := m.groups.m[group]
	m.groups.mu.Unlock()
	if !ok || now.Sub(e.at) > groupTTL {
		users, err := m.api.GetUserGroupMembersContext(ctx, group)
		if err != nil {
			return false, apiError("usergroups.users.list", err)
		}
		e = groupEntry{members: messenger.Set(users), at: now}
		m.groups.mu.Lock()
		if m.groups.m == nil {
			m.groups.m = map[string]groupEntry{}
		}
		m.groups.m[group] = e
		m.groups.mu.Unlock()
	}
	return e.members[user], nil
}

// Remind posts a short reminder of a pending request in the thread of its
// card (https://docs.slack.dev/reference/methods/chat.postMessage, thread_ts).
// One attempt: the next reminder comes remind_every later.
func (m *Messenger) Remind(ctx context.Context, r approvals.Request, ref string) error {
	ch, ts, ok := strings.Cut(ref, ":")
	if !ok || ch == "" || ts == "" {
		return nil
	}
	_, _, err := m.api.PostMessageContext(ctx, ch, slackapi.MsgOptionTS(ts),
		slackapi.MsgOptionText(EscapeMrkdwn(cards.Reminder(r, m.loc)), false))
	if err != nil {
		return apiError("chat.postMessage", err)
	}
	return nil
}
