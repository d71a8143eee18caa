package approvals

import (
	"context"
	"fmt"
	"strings"

	"github.com/metnos/gateway/storage"
)

// AuditScope says what an AuditLookup looked for: Kind "all", "person"
// (Value: the name or id given), "request", "agent" or "actor" (part of
// an actor, when the argument was neither a request nor an agent).
type AuditScope struct{ Kind, Value string }

// AuditLookup answers a person asking a chat for the audit trail (Slack's
// /approvals audit, Telegram's /history): arg is empty (everything), a
// person ("@name": rows whose actor names them; a messenger with a mention
// syntax of its own reads it and calls AuditPerson), a request id or an
// agent id. It returns the last n rows for it, oldest
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
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		return s.AuditPerson(ctx, name, name, n)
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

// AuditPerson is AuditLookup for a person: the last n rows whose actor
// contains actor (a name, or a messenger's user id), shown as who.
func (s *Service) AuditPerson(ctx context.Context, actor, who string, n int) ([]storage.AuditEvent, AuditScope, error) {
	rows, err := s.db.QueryAudit(ctx, storage.AuditFilter{Actor: actor, Limit: n, Newest: true})
	if err != nil {
		return nil, AuditScope{}, fmt.Errorf("audit lookup: %w", err)
	}
	return rows, AuditScope{"person", who}, nil
}
