package policy

// The audit rows of run-time rule changes (RuleStore's Add, Update,
// Remove).

import (
	"context"
	"maps"
	"time"

	"github.com/metnos/gateway/storage"
)

// auditRule appends the audit row of a rule change: the rule as it is
// now, as it was before (an update), and the step-up signature if any.
func auditRule(ctx context.Context, q storage.Querier, at time.Time, by, event string, ri RuleInfo, before *RuleInfo,
	signed map[string]any) error {
	d := ruleDetail(ri)
	if before != nil {
		d["before"] = ruleDetail(*before)
	}
	maps.Copy(d, signed)
	return storage.AppendAudit(ctx, q, storage.AuditEvent{At: at, Actor: by, Event: event, Detail: d})
}

func ruleDetail(ri RuleInfo) map[string]any {
	d := map[string]any{"rule_id": ri.ID, "owner": ri.Owner, "position": ri.Position,
		"capability": ri.Capability, "target": ri.Target, "action": string(ri.Action)}
	for k, v := range map[string]string{"sender_id": ri.SenderID, "agent": ri.Agent, "channel": ri.Channel} {
		if v != "" {
			d[k] = v
		}
	}
	return d
}
