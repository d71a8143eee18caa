package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// maxSimulated bounds the requests one simulation re-decides.
const maxSimulated = 100_000

// simulateBody is POST /v1/policy/simulate: a window and the policy
// changes to replay it under.
type simulateBody struct {
	Since       string            `json:"since"`
	AddRules    []ruleBody        `json:"add_rules"`
	RemoveRules []string          `json:"remove_rules"`
	Levels      map[string]string `json:"levels"`
	// Against is what a change is measured from: "arrival" (the default),
	// the outcome recorded when each request arrived; or "policy", the
	// outcome the policy as it stands now gives without the change, so
	// that only what the change itself flips is counted (the web page's
	// rule form: a rule that matches nothing changes nothing).
	Against string `json:"against"`
}

// SimChange is one request whose outcome the change would flip.
type SimChange struct {
	RequestID  string         `json:"request_id"`
	Agent      string         `json:"agent"`
	Capability string         `json:"capability"`
	Target     string         `json:"target"`
	Before     policy.Outcome `json:"before"`
	After      policy.Outcome `json:"after"`
}

// SimResult is the answer of a simulation.
type SimResult struct {
	Total   int            `json:"total"`
	Changed []SimChange    `json:"changed"`
	Counts  map[string]int `json:"counts"`
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

func (s *Server) simulate(w http.ResponseWriter, r *http.Request) {
	var b simulateBody
	if !decodeJSON(w, r, &b) {
		return
	}
	res, err := s.Simulate(r.Context(), b)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Simulate re-decides every stored request of the window under the
// policy as it stands now (the table, the rules, the grants, the guard
// and the rule-based judge) changed by b, read-only: nothing is stored,
// no grant is touched, nothing is logged. before is the outcome recorded
// on arrival. Argument values are never stored, so the guard sees the
// target alone.
func (s *Server) Simulate(ctx context.Context, b simulateBody) (SimResult, error) {
	window, err := ParseSince(b.Since)
	if err != nil {
		return SimResult{}, err
	}
	if b.Against != "" && b.Against != "arrival" && b.Against != "policy" {
		return SimResult{}, &policy.FieldError{Field: "against", Err: fmt.Errorf("%q is neither arrival nor policy", b.Against)}
	}
	current, err := s.rules.Rules(ctx)
	if err != nil {
		return SimResult{}, err
	}
	rules := slices.Clone(current)
	for _, id := range b.RemoveRules {
		i := slices.IndexFunc(rules, func(r policy.Rule) bool { return ruleID(r) == id })
		if i < 0 {
			return SimResult{}, &policy.FieldError{Field: "remove_rules", Err: fmt.Errorf("no rule %q", id)}
		}
		rules = slices.Delete(rules, i, i+1)
	}
	for i, rb := range b.AddRules {
		nr := policy.Rule{ID: "simulated:" + strconv.Itoa(i+1), Capability: rb.Capability, Target: rb.Target,
			Action: policy.Action(rb.Action), SenderID: rb.SenderID, Agent: rb.Agent, Channel: rb.Channel}
		if errs := policy.CheckRule(nr, s.cfg.HasAgent); len(errs) > 0 {
			return SimResult{}, &policy.FieldError{Field: "add_rules[" + strconv.Itoa(i) + "]." + errs[0].Field, Err: errs[0].Err}
		}
		pos, err := policy.ParsePositionJSON(rb.Position)
		if err != nil {
			return SimResult{}, err
		}
		rules = insertRule(rules, nr, pos)
	}
	levels := map[string]policy.Level{}
	for agent, l := range b.Levels {
		lv, err := policy.ParseLevel(l)
		if err != nil || !s.cfg.HasAgent(agent) {
			return SimResult{}, &policy.FieldError{Field: "levels", Err: fmt.Errorf("%q: %q is not a configured agent and a level", agent, l)}
		}
		levels[agent] = lv
	}
	reqs, err := s.svc.Window(ctx, s.now().Add(-window), maxSimulated)
	if err != nil {
		return SimResult{}, err
	}
	vg := vaglio.New(vaglio.Options{Threshold: s.cfg.Vaglio.JudgeThreshold, Home: s.decider.Norm.Home})
	defer vg.Close()
	d := policy.Decider{Rules: rules, Grants: s.decider.Grants, Norm: s.decider.Norm, Vaglio: vg}
	now := policy.Decider{Rules: current, Grants: s.decider.Grants, Norm: s.decider.Norm, Vaglio: vg}
	res := SimResult{Total: len(reqs), Changed: []SimChange{}, Counts: map[string]int{}}
	for _, q := range reqs {
		prof, ok := s.profileOf(q.Agent)
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
				return SimResult{}, err
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
			return SimResult{}, err
		}
		res.Counts[string(before)+"->"+string(dec.Outcome)]++
		if dec.Outcome != before {
			res.Changed = append(res.Changed, SimChange{RequestID: q.ID, Agent: q.Agent, Capability: q.Capability,
				Target: q.Target, Before: before, After: dec.Outcome})
		}
	}
	return res, nil
}

// ruleID is the id GET /v1/policy/rules shows for r: "api:3", "config:1".
func ruleID(r policy.Rule) string {
	if r.ID != "" {
		return r.ID
	}
	return policy.SourceConfig + ":" + strconv.Itoa(r.Index+1)
}

// profileOf is a configured agent's profile.
func (s *Server) profileOf(agent string) (policy.Profile, bool) {
	for _, a := range s.cfg.Agents {
		if a.ID == agent {
			return a.Profile(), true
		}
	}
	return policy.Profile{}, false
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
			if strings.HasPrefix(r.ID, policy.SourceAPI+":") {
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
