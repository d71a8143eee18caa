package approvals

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/metnos/gateway/storage"
)

// slackMention is how Slack writes a user in a slash command's text:
// <@U0123|roberto> (or <@U0123>).
var slackMention = regexp.MustCompile(`^<@([A-Z0-9]+)(?:\|([^>]*))?>$`)

// AuditScope says what an AuditLookup looked for: Kind "all", "person"
// (Value: the name or id given), "request", "agent" or "actor" (part of
// an actor, when the argument was neither a request nor an agent).
type AuditScope struct{ Kind, Value string }

// AuditLookup answers a person asking a chat for the audit trail (Slack's
// /approvals audit, Telegram's /history): arg is empty (everything), a
// person ("@name", or Slack's <@U…> mention: rows whose actor names them),
// a request id or an agent id. It returns the last n rows for it, oldest
// first, and what it looked for. An argument that is neither a known
// request nor an agent is taken as part of an actor.
func (s *Service) AuditLookup(ctx context.Context, arg string, n int) ([]storage.AuditEvent, AuditScope, error) {
	arg = strings.TrimSpace(arg)
	last := func(f storage.AuditFilter) ([]storage.AuditEvent, error) {
		f.Limit, f.Newest = n, true
		rows, err := s.db.QueryAudit(ctx, f)
		if err != nil {
			return nil, fmt.Errorf("audit lookup: %w", err)
		}
		return rows, nil
	}
	if arg == "" {
		rows, err := last(storage.AuditFilter{})
		return rows, AuditScope{Kind: "all"}, err
	}
	if m := slackMention.FindStringSubmatch(arg); m != nil {
		who := m[1]
		if m[2] != "" {
			who = m[2]
		}
		rows, err := last(storage.AuditFilter{Actor: m[1]})
		return rows, AuditScope{"person", who}, err
	}
	if strings.HasPrefix(arg, "@") {
		rows, err := last(storage.AuditFilter{Actor: strings.TrimPrefix(arg, "@")})
		return rows, AuditScope{"person", strings.TrimPrefix(arg, "@")}, err
	}
	rows, err := last(storage.AuditFilter{RequestID: arg})
	if err != nil || len(rows) > 0 {
		return rows, AuditScope{"request", arg}, err
	}
	if rows, err = last(storage.AuditFilter{Agent: arg}); err != nil || len(rows) > 0 {
		return rows, AuditScope{"agent", arg}, err
	}
	rows, err = last(storage.AuditFilter{Actor: arg})
	return rows, AuditScope{"actor", arg}, err
}
