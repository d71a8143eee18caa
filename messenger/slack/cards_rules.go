package slack

import (
	"strings"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// SlackRuleLine is one rule as /approvals rules lists it: its position
// within its owner, the action, the capability, the target, its scope and
// where it comes from ("api:3 · run time" or "config:1 · config file").
func SlackRuleLine(r policy.RuleInfo, l locale.Locale) string {
	cs := cards.NewCuts(l)
	s := l.T("rules.line", r.Position, EscapeMrkdwn(string(r.Action)), EscapeMrkdwn(r.Capability),
		codeSpan(&cs, "", cards.SafeIn(r.Target, l), 500))
	var scope []string
	for _, kv := range [][2]string{{l.T("rules.agent"), r.Agent}, {l.T("rules.channel"), r.Channel}, {l.T("rules.sender"), r.SenderID}} {
		if kv[1] != "" {
			scope = append(scope, kv[0]+" "+EscapeMrkdwn(cards.SafeIn(kv[1], l)))
		}
	}
	if len(scope) > 0 {
		s += " · " + strings.Join(scope, ", ")
	}
	if r.Source == policy.SourceConfig {
		s += " · `" + EscapeMrkdwn(r.ID) + "` " + l.T("rules.from_config")
	} else {
		s += " · `" + EscapeMrkdwn(r.ID) + "` " + l.T("rules.by", EscapeMrkdwn(cards.SafeIn(r.CreatedBy, l)))
	}
	return fitEscaped(s, SlackMaxSectionText)
}

// SlackRulesText is the answer to /approvals rules: every rule, org first
// then user, each owner in evaluation order.
func SlackRulesText(rules []policy.RuleInfo, l locale.Locale) string {
	if len(rules) == 0 {
		return l.T("rules.none")
	}
	var b strings.Builder
	b.WriteString(l.T("rules.title", len(rules)))
	owner := ""
	for _, r := range rules {
		if r.Owner != owner {
			owner = r.Owner
			if owner == "org" {
				b.WriteString("\n_" + l.T("rules.org") + "_")
			} else {
				b.WriteString("\n_" + l.T("rules.user") + "_")
			}
		}
		b.WriteString("\n• " + SlackRuleLine(r, l))
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}
