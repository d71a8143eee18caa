package cards

import (
	"fmt"
	"strings"

	"github.com/metnos/gateway/policy"
)

// SlackRuleLine is one rule as /approvals rules lists it: its position
// within its owner, the action, the capability, the target, its scope and
// where it comes from ("api:3 · run time" or "config:1 · config file").
func SlackRuleLine(r policy.RuleInfo) string {
	s := fmt.Sprintf("%d. *%s* %s on %s", r.Position, EscapeMrkdwn(string(r.Action)), EscapeMrkdwn(r.Capability),
		codeSpan(r.Target, 500))
	var scope []string
	for _, kv := range [][2]string{{"agent", r.Agent}, {"channel", r.Channel}, {"sender", r.SenderID}} {
		if kv[1] != "" {
			scope = append(scope, kv[0]+" "+EscapeMrkdwn(kv[1]))
		}
	}
	if len(scope) > 0 {
		s += " · " + strings.Join(scope, ", ")
	}
	if r.Source == policy.SourceConfig {
		s += " · `" + EscapeMrkdwn(r.ID) + "` config file"
	} else {
		s += " · `" + EscapeMrkdwn(r.ID) + "` by " + EscapeMrkdwn(r.CreatedBy)
	}
	return fitEscaped(s, SlackMaxSectionText)
}

// SlackRulesText is the answer to /approvals rules: every rule, org first
// then user, each owner in evaluation order.
func SlackRulesText(rules []policy.RuleInfo) string {
	if len(rules) == 0 {
		return "No rules: the autonomy table and grants decide."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*Rules (%d)* — within an owner the first match wins; across owners the strictest; a block always wins", len(rules))
	owner := ""
	for _, r := range rules {
		if r.Owner != owner {
			owner = r.Owner
			if owner == "org" {
				b.WriteString("\n_For everyone (org)_")
			} else {
				b.WriteString("\n_Scoped (user)_")
			}
		}
		b.WriteString("\n• " + SlackRuleLine(r))
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}
