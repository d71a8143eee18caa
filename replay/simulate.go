package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// MaxRequests bounds the requests one simulation re-decides, and those
// one suggestion reads.
const MaxRequests = 100_000

// RuleBody is a rule as POST /v1/policy/rules takes it, and as a
// simulation adds it.
type RuleBody struct {
	Capability string          `json:"capability"`
	Target     string          `json:"target"`
	Action     string          `json:"action"`
	SenderID   string          `json:"sender_id"`
	Agent      string          `json:"agent"`
	Channel    string          `json:"channel"`
	Position   json.RawMessage `json:"position"`
}

// Body is POST /v1/policy/simulate: a window and the policy changes to
// replay it under.
type Body struct {
	Since       string            `json:"since"`
	AddRules    []RuleBody        `json:"add_rules"`
	RemoveRules []string          `json:"remove_rules"`
	Levels      map[string]string `json:"levels"`
	// Against is what a change is measured from: "arrival" (the default),
	// the outcome recorded when each request arrived; or "policy", the
	// outcome the policy as it stands now gives without the change, so
	// that only what the change itself flips is counted (the web page's
	// rule form: a rule that matches nothing changes nothing).
	Against string `json:"against"`
}

// Change is one request whose outcome the change would flip.
type Change struct {
	RequestID  string         `json:"request_id"`
	Agent      string         `json:"agent"`
	Capability string         `json:"capability"`
	Target     string         `json:"target"`
	Before     policy.Outcome `json:"before"`
	After      policy.Outcome `json:"after"`
}

// Result is the answer of a simulation.
type Result struct {
	Total   int            `json:"total"`
	Changed []Change       `json:"changed"`
	Counts  map[string]int `json:"counts"`
	// Decided counts, for each added rule (by its id, "simulated:1" for
	// add_rules[0]…), the requests it would decide: those whose rule
	// layer it speaks for, being the rule that matches them first (the
	// outcome may stay what it was: a rule can decide what was decided
	// alike before). Every added rule has its count, 0 too.
	Decided map[string]int `json:"decided"`
}

// ParseSince reads a window: a Go duration or whole days ("7d").
func ParseSince(s string) (time.Duration, error) {
	if s == "" {
		return 7 * 24 * time.Hour, nil
	}
	d, err := config.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, &policy.FieldError{Field: "since", Err: fmt.Errorf("%q is not a window such as \"7d\" or \"36h\"", s)}
	}
	return d, nil
}

// Policy is what a simulation decides with: the policy as it stands now
// (the rules, the grants, the normalizer of targets, the judge's
// threshold) and the configured agents.
type Policy struct {
	Rules          []policy.Rule
	Grants         policy.GrantFinder
	Norm           policy.Normalizer
	JudgeThreshold float64
	Agents         []config.Agent
}

// Simulate re-decides reqs (the window b.Since names, read by the caller)
// under p changed by b (the table, the rules, the grants, the guard and
// the rule-based judge), read-only: nothing is stored, no grant is
// touched, nothing is logged. before is the outcome recorded on arrival.
// Argument values are never stored, so the guard sees the target alone.
func Simulate(ctx context.Context, p Policy, reqs []approvals.Request, b Body) (Result, error) {
	if _, err := ParseSince(b.Since); err != nil {
		return Result{}, err
	}
	if b.Against != "" && b.Against != "arrival" && b.Against != "policy" {
		return Result{}, &policy.FieldError{Field: "against", Err: fmt.Errorf("%q is neither arrival nor policy", b.Against)}
	}
	current := p.Rules
	rules := slices.Clone(current)
	for _, id := range b.RemoveRules {
		i := slices.IndexFunc(rules, func(r policy.Rule) bool { return RuleID(r) == id })
		if i < 0 {
			return Result{}, &policy.FieldError{Field: "remove_rules", Err: fmt.Errorf("no rule %q", id)}
		}
		rules = slices.Delete(rules, i, i+1)
	}
	for i, rb := range b.AddRules {
		nr := policy.Rule{ID: simulatedID(i), Capability: rb.Capability, Target: rb.Target,
			Action: policy.Action(rb.Action), SenderID: rb.SenderID, Agent: rb.Agent, Channel: rb.Channel}
		if errs := policy.CheckRule(nr, p.hasAgent); len(errs) > 0 {
			return Result{}, &policy.FieldError{Field: "add_rules[" + strconv.Itoa(i) + "]." + errs[0].Field, Err: errs[0].Err}
		}
		pos, err := policy.ParsePositionJSON(rb.Position)
		if err != nil {
			return Result{}, err
		}
		rules = insertRule(rules, nr, pos)
	}
	levels := map[string]policy.Level{}
	for agent, l := range b.Levels {
		lv, err := policy.ParseLevel(l)
		if err != nil || !p.hasAgent(agent) {
			return Result{}, &policy.FieldError{Field: "levels", Err: fmt.Errorf("%q: %q is not a configured agent and a level", agent, l)}
		}
		levels[agent] = lv
	}
	vg := vaglio.New(vaglio.Options{Threshold: p.JudgeThreshold, Home: p.Norm.Home})
	defer vg.Close()
	d := policy.Decider{Rules: rules, Grants: p.Grants, Norm: p.Norm, Vaglio: vg}
	now := policy.Decider{Rules: current, Grants: p.Grants, Norm: p.Norm, Vaglio: vg}
	res := Result{Total: len(reqs), Changed: []Change{}, Counts: map[string]int{}, Decided: map[string]int{}}
	for i := range b.AddRules {
		res.Decided[simulatedID(i)] = 0
	}
	for _, q := range reqs {
		prof, ok := p.profileOf(q.Agent)
		if !ok {
			continue // an agent no longer configured: nothing it asks is decided now
		}
		in := policy.Input{Profile: prof, Capability: q.Capability, Target: q.Target,
			Requested: q.Autonomy, Channel: q.Channel, SenderID: q.SenderID, SessionID: q.SessionID, Intent: q.Intent,
			Executor: q.Executor, DryRun: true}
		before := q.Outcome
		if b.Against == "policy" {
			dec, err := now.Decide(ctx, in)
			var fe *policy.FieldError
			if errors.As(err, &fe) {
				continue
			}
			if err != nil {
				return Result{}, err
			}
			before = dec.Outcome
		}
		if lv, ok := levels[q.Agent]; ok {
			in.Profile.Ceiling, in.Requested = lv, 0
		}
		dec, err := d.Decide(ctx, in)
		var fe *policy.FieldError
		if errors.As(err, &fe) {
			continue
		}
		if err != nil {
			return Result{}, err
		}
		res.Counts[string(before)+"->"+string(dec.Outcome)]++
		if dec.Rule != nil {
			if _, added := res.Decided[dec.Rule.ID]; added {
				res.Decided[dec.Rule.ID]++
			}
		}
		if dec.Outcome != before {
			res.Changed = append(res.Changed, Change{RequestID: q.ID, Agent: q.Agent, Capability: q.Capability,
				Target: q.Target, Before: before, After: dec.Outcome})
		}
	}
	return res, nil
}

// simulatedID is the id of add_rules[i] in a simulation.
func simulatedID(i int) string { return simulatedPrefix + strconv.Itoa(i+1) }

const simulatedPrefix = "simulated:"

// RuleID is the id GET /v1/policy/rules shows for r: "api:3", "config:1".
func RuleID(r policy.Rule) string {
	if r.ID != "" {
		return r.ID
	}
	return policy.SourceConfig + ":" + strconv.Itoa(r.Index+1)
}

// profileOf is a configured agent's profile.
func (p Policy) profileOf(agent string) (policy.Profile, bool) {
	for _, a := range p.Agents {
		if a.ID == agent {
			return a.Profile(), true
		}
	}
	return policy.Profile{}, false
}

// hasAgent says whether agent is configured.
func (p Policy) hasAgent(agent string) bool {
	_, ok := p.profileOf(agent)
	return ok
}

// insertRule puts nr among rules as a run-time rule at pos within its
// owner: the top (before the owner's first rule), the bottom of the
// owner's run-time rules, or before its Nth rule.
func insertRule(rules []policy.Rule, nr policy.Rule, pos policy.Position) []policy.Rule {
	var idx []int // indexes of the owner's rules, in order
	lastAPI := -1
	for i, r := range rules {
		if r.Owner() == nr.Owner() {
			idx = append(idx, i)
			// A rule this simulation added is a run-time rule too.
			if strings.HasPrefix(r.ID, policy.SourceAPI+":") || strings.HasPrefix(r.ID, simulatedPrefix) {
				lastAPI = i
			}
		}
	}
	at := len(rules)
	switch {
	case len(idx) == 0:
	case pos.Bottom || pos.N > len(idx):
		at = idx[0]
		if lastAPI >= 0 {
			at = lastAPI + 1
		}
	case pos.N > 1:
		at = idx[pos.N-1]
	default: // the top
		at = idx[0]
	}
	return slices.Insert(rules, at, nr)
}
