// Package replay answers "what would the policy do" over stored requests,
// read-only, as pure functions the API, the web page and the command line
// share: Simulate re-decides a window of requests under a changed policy
// (rules added or removed, other levels), Suggest proposes approve rules
// from what people allowed, each with what it would have done.
package replay

import (
	"path"
	"sort"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/shell"
	"github.com/metnos/gateway/policy"
)

// Suggestion is an approve rule proposed from the requests people allowed
// (GET /v1/policy/suggestions).
type Suggestion struct {
	Capability string   `json:"capability"`
	Target     string   `json:"target"`
	Action     string   `json:"action"`
	Agent      string   `json:"agent"`
	SenderID   string   `json:"sender_id"`
	Channel    string   `json:"channel"`
	Count      int      `json:"count"`
	Examples   []string `json:"examples"`
	Replay     Replay   `json:"replay"`
}

// Replay is what a suggested rule would have done over the window.
type Replay struct {
	WouldAllow   int `json:"would_allow"`
	PersonDenied int `json:"person_denied"`
	Blocked      int `json:"blocked"`
}

// family is the requests one suggestion would cover: one agent, one
// capability, one principal, and one command name, directory, host or
// exact target.
type family struct {
	agent, capability, channel, sender, key string
	allowed                                 []approvals.Request
}

// Suggest proposes approve rules from reqs (a window's requests, oldest
// first) that a person (a messenger, the web page) or an admin agent
// through the API allowed, at least minCount times for the same agent,
// capability and principal: the narrowest pattern covering them (a
// code:exec command only when every one is a single simple command, as
// bash reads it; a path glob no wider than Allow always may grant; an
// exact host), and only one CheckRule accepts (no wrapper, no option that
// runs or writes). A candidate that would have allowed any request of the
// window a person denied, or that the guard, the judge or a block rule
// stopped, is never suggested. Most used first.
func Suggest(n policy.Normalizer, reqs []approvals.Request, minCount int) []Suggestion {
	fams := map[string]*family{}
	var order []string
	for _, r := range reqs {
		if !personAllowed(r) {
			continue
		}
		key, ok := familyKey(n, r)
		if !ok {
			continue
		}
		k := strings.Join([]string{r.Agent, r.Capability, r.Channel, r.SenderID, key}, "\x00")
		f := fams[k]
		if f == nil {
			f = &family{agent: r.Agent, capability: r.Capability, channel: r.Channel, sender: r.SenderID, key: key}
			fams[k] = f
			order = append(order, k)
		}
		f.allowed = append(f.allowed, r)
	}
	out := []Suggestion{}
	for _, k := range order {
		f := fams[k]
		if len(f.allowed) < minCount {
			continue
		}
		target, ok := candidate(n, f)
		if !ok {
			continue
		}
		c, _ := policy.Lookup(f.capability)
		rule := policy.Rule{Capability: f.capability, Target: target, Action: policy.ActionApprove,
			Agent: f.agent, Channel: f.channel, SenderID: f.sender}
		if len(policy.CheckRule(rule, nil)) > 0 {
			continue // never a rule config check or the API would refuse (git diff* admits --output)
		}
		rp, safe := wouldDo(n, c, rule, reqs)
		if !safe {
			continue
		}
		sg := Suggestion{Capability: f.capability, Target: target, Action: string(policy.ActionApprove), Agent: f.agent,
			SenderID: f.sender, Channel: f.channel, Count: len(f.allowed), Examples: []string{}, Replay: rp}
		for _, r := range f.allowed[:min(3, len(f.allowed))] { // the first three
			sg.Examples = append(sg.Examples, r.ID)
		}
		out = append(out, sg)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}

// personAllowed: allowed by a person's (or the admin API's) decision, not
// by policy on arrival.
func personAllowed(r approvals.Request) bool {
	return r.Status == approvals.StatusAllowed && r.Decision != nil && r.Outcome == policy.ApprovalRequired
}

// familyKey is what, besides agent, capability and principal, the requests
// one suggestion covers share: a command's first two words, a file's
// directory, a host, an exact target. false: the request can seed no suggestion.
func familyKey(n policy.Normalizer, r approvals.Request) (string, bool) {
	c, err := policy.Lookup(r.Capability)
	if err != nil {
		return "", false
	}
	switch {
	case c.Name == "code:exec":
		// The command's first two words: "npm test" and "npm publish" are
		// different families; "go test ./..." and "go test -run X" one.
		cmd, ok := shell.Single(r.Target, 0)
		if !ok || len(cmd.Args) == 0 {
			return "", false
		}
		return strings.Join(cmd.Args[:min(2, len(cmd.Args))], " "), true
	case c.TargetKind == policy.KindPathGlob:
		p := n.Normalize(c.TargetKind, r.Target)
		if !strings.HasPrefix(p, "/") {
			return "", false
		}
		return path.Dir(p), true
	}
	return n.Normalize(c.TargetKind, r.Target), true
}

// candidate is the narrowest pattern covering every allowed request of f.
func candidate(n policy.Normalizer, f *family) (string, bool) {
	c, _ := policy.Lookup(f.capability)
	first := f.allowed[0].Target
	if c.Name == "code:exec" {
		var prefix []string
		same := true
		for i, r := range f.allowed {
			cmd, ok := shell.Single(r.Target, 0)
			if !ok {
				return "", false
			}
			same = same && r.Target == first
			if i == 0 {
				prefix = cmd.Args
				continue
			}
			k := 0
			for k < len(prefix) && k < len(cmd.Args) && prefix[k] == cmd.Args[k] {
				k++
			}
			prefix = prefix[:k]
		}
		if same {
			return first, true
		}
		// A common prefix of at least two words ("npm test*", never
		// "npm*"), written as every command's text starts.
		p := strings.Join(prefix, " ")
		if len(prefix) < 2 || strings.ContainsAny(p, "*?[]{}\\") {
			return "", false
		}
		for _, r := range f.allowed {
			if !strings.HasPrefix(r.Target, p) {
				return "", false
			}
		}
		return p + "*", true
	}
	// The narrowest of the first request's scopes (each no wider than
	// Allow always may grant) that covers every allowed request.
	for _, sc := range n.Scopes(c.TargetKind, first, "") {
		all := true
		for _, r := range f.allowed {
			all = all && n.MatchRule(c.TargetKind, sc, r.Target)
		}
		if all {
			return sc, true
		}
	}
	return "", false
}

// wouldDo runs rule over the window: how many approval_required requests
// it would have allowed, and whether it would have allowed any a person
// denied or that the guard, the judge or a block rule stopped (then it is
// not safe to suggest).
func wouldDo(n policy.Normalizer, c policy.Capability, rule policy.Rule, reqs []approvals.Request) (Replay, bool) {
	var rp Replay
	rules := []policy.Rule{rule}
	for _, r := range reqs {
		if r.Capability != c.Name {
			continue
		}
		m := policy.EvalRules(n, rules, policy.RuleSubject{Capability: c, Target: r.Target, Agent: r.Agent,
			Channel: r.Channel, SenderID: r.SenderID})
		if m.Action != policy.ActionApprove {
			continue
		}
		switch {
		case r.BlockedBy != nil:
			rp.Blocked++
		case r.Decision != nil && *r.Decision == approvals.Deny:
			rp.PersonDenied++
		case r.Outcome == policy.ApprovalRequired:
			rp.WouldAllow++
		}
	}
	return rp, rp.Blocked == 0 && rp.PersonDenied == 0
}
