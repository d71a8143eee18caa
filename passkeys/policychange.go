package passkeys

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/metnos/gateway/storage"
)

// PolicyChange is what an admin's passkey signs to change rules or grants
// on the web page ([web] policy_step_up = "passkey"): the change, its
// fields, the replay of its effect the page showed before the assertion,
// and who made it. Its JSON (PolicyChange.JSON) is hashed into the
// WebAuthn challenge as a step-up's Content is, and stored in the change's
// own audit row, where VerifyRow holds it to the row.
type PolicyChange struct {
	Change string `json:"change"` // ChangeAddRule, ChangeRemoveRule or ChangeRevokeGrant
	// Fields are the change's: a rule's capability, target, action,
	// agent, channel, sender_id and position; a removed rule's rule_id; a
	// revoked grant's grant_id (and what it covered).
	Fields map[string]string `json:"fields"`
	Replay string            `json:"replay"` // what the page showed of its effect
	By     string            `json:"by"`     // the web user
	// PolicyV is the policy content's version (JSON writes
	// PolicyContentVersion); its presence tells a policy change from a
	// decision.
	PolicyV int `json:"policy_v"`
}

// The changes a PolicyChange signs.
const (
	ChangeAddRule     = "add_rule"
	ChangeRemoveRule  = "remove_rule"
	ChangeRevokeGrant = "revoke_grant"
)

// PolicyContentVersion is the version PolicyChange.JSON writes.
const PolicyContentVersion = 1

// JSON is the signed content: compact JSON, the fields' keys sorted.
func (c PolicyChange) JSON() []byte {
	c.PolicyV = PolicyContentVersion
	if c.Fields == nil {
		c.Fields = map[string]string{}
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings only: json.Marshal cannot fail
	}
	return b
}

// ParsePolicyChange reads a PolicyChange's JSON; ok is false for content
// that is not one (a decision's).
func ParsePolicyChange(content []byte) (c PolicyChange, ok bool) {
	if err := json.Unmarshal(content, &c); err != nil || c.PolicyV == 0 {
		return PolicyChange{}, false
	}
	return c, true
}

// policyEvents is the audit event of each change.
var policyEvents = map[string]string{
	ChangeAddRule: storage.AuditRuleAdded, ChangeRemoveRule: storage.AuditRuleRemoved,
	ChangeRevokeGrant: storage.AuditGrantRevoked,
}

// policyRowKeys are the signed fields each change's row must show alike
// (a rule's position in the form, top or bottom, is the row's number, and
// not compared).
var policyRowKeys = map[string][]string{
	ChangeAddRule:    {"capability", "target", "action", "agent", "channel", "sender_id"},
	ChangeRemoveRule: {"rule_id", "capability", "target", "action", "agent", "channel", "sender_id"},
}

// matchPolicyRow holds a signed policy change to its audit row: the row is
// that change's event, made by the web user who signed, and shows the
// signed fields.
func matchPolicyRow(c PolicyChange, row storage.AuditEvent) error {
	if c.PolicyV != PolicyContentVersion {
		return fmt.Errorf("the policy content's version %d is unknown", c.PolicyV)
	}
	event, ok := policyEvents[c.Change]
	if !ok {
		return fmt.Errorf("the signed change %q is unknown", c.Change)
	}
	if row.Event != event {
		return fmt.Errorf("the signed change %s is not the row's %s", c.Change, row.Event)
	}
	if !actorIs(row.Actor, c.By) {
		return fmt.Errorf("the change was signed by %s, the row names %s", c.By, row.Actor)
	}
	if c.Change == ChangeRevokeGrant {
		if got := strconv.FormatInt(row.GrantID, 10); c.Fields["grant_id"] != got {
			return fmt.Errorf("the signed grant %q is not the row's %s", c.Fields["grant_id"], got)
		}
		return nil
	}
	for _, k := range policyRowKeys[c.Change] {
		if got := detailString(row.Detail, k); got != c.Fields[k] {
			return fmt.Errorf("the signed %s %q is not the row's %q", k, c.Fields[k], got)
		}
	}
	if row.RequestID != "" {
		return errors.New("a policy change's row names a request")
	}
	return nil
}
