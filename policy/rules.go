package policy

import (
	"strconv"
	"strings"

	"github.com/metnos/gateway/internal/shell"
)

// Action is what a config rule does when it matches.
type Action string

// The rule actions, from most permissive to most restrictive.
const (
	ActionApprove         Action = "approve"
	ActionRequireApproval Action = "require_approval"
	ActionBlock           Action = "block"
)

// severity orders actions so that the most restrictive wins across owners.
func (a Action) severity() int {
	switch a {
	case ActionApprove:
		return 1
	case ActionRequireApproval:
		return 2
	case ActionBlock:
		return 3
	}
	return 0
}

// Rule is one [[policy.rules]] entry. A rule with any scope field set
// belongs to the owner "user", one without to the owner "org".
type Rule struct {
	Index      int    `json:"index"`        // position in the file, for traces
	ID         string `json:"id,omitempty"` // "api:12" for a rule added at run time; "" for the file's
	Capability string `json:"capability"`
	Target     string `json:"target"`
	Action     Action `json:"action"`
	SenderID   string `json:"sender_id,omitempty"`
	Agent      string `json:"agent,omitempty"`
	Channel    string `json:"channel,omitempty"`
}

// Label names the rule in reasons and traces: "#3" for the file's third
// rule, "api:12" for a rule added at run time.
func (r Rule) Label() string {
	if r.ID != "" {
		return r.ID
	}
	return "#" + strconv.Itoa(r.Index+1)
}

// Owner is "user" for a scoped rule and "org" for an unscoped one.
func (r Rule) Owner() string {
	if r.SenderID != "" || r.Agent != "" || r.Channel != "" {
		return "user"
	}
	return "org"
}

// MatchesCapability reports whether the rule's capability pattern (an exact
// name, "*", or "prefix:*") covers name.
func (r Rule) MatchesCapability(name string) bool {
	switch {
	case r.Capability == "*":
		return true
	case strings.HasSuffix(r.Capability, ":*"):
		return strings.HasPrefix(name, strings.TrimSuffix(r.Capability, "*"))
	}
	return r.Capability == name
}

// RuleSubject is what a rule's scope and pattern are matched against.
type RuleSubject struct {
	Capability Capability
	Target     string
	Agent      string
	Channel    string
	SenderID   string
	// Addrs are the canonical addresses a host target's name resolves to
	// (see AddrCache), when a rule needs them: a block or
	// require_approval rule on an address holds for a name reaching it.
	// Never an approve rule: a name's answer is its owner's to choose.
	Addrs []string
}

// matchesTo says whether r holds for s, whose target's subject is t,
// computed by the caller once for every rule.
func (r Rule) matchesTo(n Normalizer, s RuleSubject, t string) bool {
	if !r.MatchesCapability(s.Capability.Name) {
		return false
	}
	if r.SenderID != "" && r.SenderID != s.SenderID ||
		r.Agent != "" && r.Agent != s.Agent ||
		r.Channel != "" && r.Channel != s.Channel {
		return false
	}
	if !n.matchRuleTo(s.Capability.TargetKind, r.Target, t) && !r.matchesAddr(n, s) {
		return false
	}
	// A glob written for one command approves only what bash reads as
	// one command, and only one that takes no risk through its arguments
	// (parsed last: only a command the rule would approve).
	return r.Action != ActionApprove || s.Capability.Name != "code:exec" || approvableCommand(s.Target)
}

// matchesAddr reports a block or require_approval rule on an address
// that one of the subject's resolved addresses matches.
func (r Rule) matchesAddr(n Normalizer, s RuleSubject) bool {
	if r.Action == ActionApprove {
		return false
	}
	for _, a := range s.Addrs {
		if n.MatchRule(KindHost, r.Target, a) {
			return true
		}
	}
	return false
}

// RuleMatch is the result of evaluating the rules: the winning action (""
// when no rule matched) and the rule that decided it.
type RuleMatch struct {
	Action Action `json:"action,omitempty"`
	Rule   *Rule  `json:"rule,omitempty"`
}

// EvalRules applies SPEC §4 step 4: within an owner the first matching rule
// in file order wins; across owners the most restrictive action wins. One
// strengthening: a matching block rule wins wherever it stands, even after
// an approve rule of the same owner, because the deny list is an air-gap
// ("block beats everything"), not an ordering puzzle.
func EvalRules(n Normalizer, rules []Rule, s RuleSubject) RuleMatch {
	return evalRulesTo(n, rules, s, n.subject(s.Capability.TargetKind, s.Target))
}

// evalRulesTo is EvalRules with t, the target's subject (Normalizer.subject).
func evalRulesTo(n Normalizer, rules []Rule, s RuleSubject, t string) RuleMatch {
	for i := range rules {
		if r := &rules[i]; r.Action == ActionBlock && r.matchesTo(n, s, t) {
			return RuleMatch{Action: ActionBlock, Rule: r}
		}
	}
	// No block rule matched (the loop above returned on one): only the
	// others are left to match.
	var user, org *Rule
	for i := range rules {
		r := &rules[i]
		if r.Action == ActionBlock || (r.Owner() == "user" && user != nil) || (r.Owner() == "org" && org != nil) {
			continue
		}
		if r.matchesTo(n, s, t) {
			if r.Owner() == "user" {
				user = r
			} else {
				org = r
			}
		}
	}
	best := user
	if org != nil && (best == nil || org.Action.severity() > best.Action.severity()) {
		best = org
	}
	if best == nil {
		return RuleMatch{}
	}
	return RuleMatch{Action: best.Action, Rule: best}
}

// shellControl lists what chains, substitutes or redirects in a shell
// command line: a quick refusal before the parse.
const shellControl = ";&|`$<>\n\r"

// SingleCommand reports whether bash reads a command line as exactly one
// simple command whose words are all known before it runs (shell.Single):
// no list, pipe, substitution, expansion, glob, brace, assignment or
// redirection, and a line the parser refuses is not one. Only such a
// command can be approved by a rule's glob ("git status*" never approves
// "git status && curl … | sh", "git status $(id)" or "git status{,;id}"),
// or covered by a token's target pattern other than an equal one.
func SingleCommand(cmd string) bool {
	if strings.ContainsAny(cmd, shellControl) {
		return false
	}
	_, ok := shell.Single(cmd, 0)
	return ok
}
