package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// CheckRule validates one rule the same way wherever it comes from: a
// [[policy.rules]] entry of the config file, or a rule added at run time
// through the API, the CLI, the web page or a messenger. Each problem names its
// field (capability, target, action, agent). knownAgent, when not nil,
// says whether an agent id exists; a scope naming an unknown agent is
// refused. A nil result means the rule is valid.
func CheckRule(r Rule, knownAgent func(string) bool) []*FieldError {
	out, caps := checkSubject(r.Capability, r.Target)
	add := func(field, format string, args ...any) {
		out = append(out, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	switch r.Action {
	case ActionApprove, ActionRequireApproval, ActionBlock:
	case "":
		add("action", "required (want approve, require_approval or block)")
	default:
		add("action", "unknown action %q (want approve, require_approval or block)", r.Action)
	}
	if r.Action == ActionApprove && r.Target != "" {
		for _, cp := range caps {
			if cp.DefaultApproval != ApprovalAlways {
				continue
			}
			if sample, ok := matchesArbitrary(cp, r.Target); ok {
				add("target", "an approve rule on %s (capability %q) must not match arbitrary targets: %q matches %q; %s always needs a person unless the target is spelled out (e.g. target = \"git status*\")",
					cp.Name, r.Capability, r.Target, sample, cp.Name)
				break
			}
		}
		if matchesCode(caps) && len(out) == 0 {
			if sample, why, hit := riskyMatch(r.Target); hit {
				add("target", "an approve rule on code:exec must not match a command that runs, writes or reads a config through its arguments: %q matches %q (%s); spell out the command it approves (e.g. target = \"git diff\"), or let such commands ask",
					r.Target, sample, why)
			}
		}
	}
	return append(out, checkScope(r.Agent, r.SenderID, r.Channel, knownAgent)...)
}

// matchesCode reports whether code:exec is among caps.
func matchesCode(caps []Capability) bool {
	for _, c := range caps {
		if c.Name == "code:exec" {
			return true
		}
	}
	return false
}

// checkSubject checks what a rule or a notify pattern matches requests
// on: the capability pattern and the target glob. It returns the
// capabilities the pattern covers.
func checkSubject(capability, target string) ([]*FieldError, []Capability) {
	var out []*FieldError
	add := func(field, format string, args ...any) {
		out = append(out, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	caps, err := CapabilityPattern(capability)
	if err != nil {
		out = append(out, &FieldError{Field: "capability", Err: err})
	}
	switch {
	case target == "":
		add("target", "required (use \"*\" for any target)")
	case len(target) > MaxTargetBytes:
		add("target", "longer than %d bytes", MaxTargetBytes)
	case strings.ContainsRune(target, 0):
		add("target", "contains a NUL byte")
	default:
		if _, err := path.Match(target, ""); err != nil {
			add("target", "bad glob %q: %v", target, err)
		}
	}
	return out, caps
}

// checkScope checks the optional scope of a rule or a notify pattern.
func checkScope(agent, senderID, channel string, knownAgent func(string) bool) []*FieldError {
	var out []*FieldError
	add := func(field, format string, args ...any) {
		out = append(out, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	if agent != "" && knownAgent != nil && !knownAgent(agent) {
		add("agent", "no agent %q in [[agents]]", agent)
	}
	for _, f := range []struct{ name, v string }{{"sender_id", senderID}, {"agent", agent}, {"channel", channel}} {
		if len(f.v) > 256 || strings.ContainsRune(f.v, 0) {
			add(f.name, "must be at most 256 bytes with no NUL byte")
		}
	}
	return out
}

// CapabilityPattern checks a rule's capability ("fs:read", "*", "fs:*")
// and returns the registry entries it matches.
func CapabilityPattern(s string) ([]Capability, error) {
	if s == "" {
		return nil, errors.New("required (a capability name, \"*\" or a prefix such as \"fs:*\")")
	}
	if s == "*" {
		return Registry(), nil
	}
	if prefix, ok := strings.CutSuffix(s, ":*"); ok {
		var out []Capability
		for _, c := range Registry() {
			if strings.HasPrefix(c.Name, prefix+":") {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w %q (no capability has the prefix %q; want one of %s)",
				ErrUnknownCapability, s, prefix, strings.Join(prefixes(), ", "))
		}
		return out, nil
	}
	c, err := Lookup(s)
	if err != nil {
		return nil, err
	}
	return []Capability{c}, nil
}

// prefixes lists the registry's prefixes, in registry order.
func prefixes() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range Registry() {
		pre, _, _ := strings.Cut(c.Name, ":")
		if !seen[pre] {
			seen[pre] = true
			out = append(out, pre)
		}
	}
	return out
}
