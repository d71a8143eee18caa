package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TokenProfile is what a token may do: the agent's own profile for its
// configured token, or a child token's, which is the restrictive-only
// merge of its parent's and what the child was asked for (AINL's
// capability grant: allow lists intersected, deny lists united, limits
// at their minimum).
type TokenProfile struct {
	Autonomy Level `json:"autonomy"`
	// AllowCapabilities: nil means every capability; an empty, non-nil list
	// means none (an intersection that came out empty).
	AllowCapabilities []string `json:"allow_capabilities"`
	DenyCapabilities  []string `json:"deny_capabilities"`
	// Targets limits, per capability, the targets a request may name;
	// a capability absent from it is not limited.
	Targets map[string][]string `json:"targets,omitempty"`
	// MaxRequests bounds the requests made with the token (nil: no bound).
	// Requests made with a descendant count against it too.
	MaxRequests *int `json:"max_requests"`
}

// RootProfile is the profile of an agent's configured token.
func RootProfile(ceiling Level, allow, deny []string) TokenProfile {
	p := TokenProfile{Autonomy: ceiling, DenyCapabilities: slices.Clone(deny)}
	if len(allow) > 0 {
		p.AllowCapabilities = slices.Clone(allow)
	}
	if p.DenyCapabilities == nil {
		p.DenyCapabilities = []string{}
	}
	return p
}

// Profile is the decision profile of a token of agent, named token in traces.
func (tp TokenProfile) Profile(agent, token string) Profile {
	return Profile{Agent: agent, Ceiling: tp.Autonomy, Allow: tp.AllowCapabilities, Deny: tp.DenyCapabilities,
		AllowNone: tp.AllowCapabilities != nil && len(tp.AllowCapabilities) == 0, Targets: tp.Targets, Token: token}
}

// TokenRequest is what POST /v1/tokens asks for. Absent fields (nil, or an
// empty list) take the caller's.
type TokenRequest struct {
	TTL               time.Duration
	Autonomy          *Level
	AllowCapabilities []string
	DenyCapabilities  []string
	Targets           map[string][]string
	MaxRequests       *int
	Name              string
}

// Narrowed is one thing a child token was asked for and not given (or given
// less of): nothing is widened, and nothing is narrowed silently.
type Narrowed struct {
	Field string `json:"field"`
	Asked any    `json:"asked"`
	Given any    `json:"given"`
}

// MaxTokenTTL bounds a child token's life even when its parent has no
// expiry (an agent's configured token).
const MaxTokenTTL = 365 * 24 * time.Hour

// maxTokenName bounds a child token's name (it shows on cards).
const maxTokenName = 64

// Narrow merges a parent's profile with a request into the child's
// profile, never wider than the parent in any respect: autonomy the
// minimum; allow lists intersected (the parent's nil meaning "all");
// deny lists united; targets intersected (a child pattern survives only
// when the parent's patterns cover every target it matches); max_requests
// the minimum; the expiry no later than the parent's (parentExpires nil:
// no expiry) nor now + MaxTokenTTL. It returns what was asked and not
// given. Bad input is a *FieldError naming the field.
func (n Normalizer) Narrow(parent TokenProfile, parentExpires *time.Time, req TokenRequest, now time.Time) (
	child TokenProfile, expires time.Time, narrowed []Narrowed, err error) {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if req.TTL <= 0 {
		return child, expires, nil, bad("ttl", "required: a positive duration such as \"2h\"")
	}
	if len(req.Name) > maxTokenName || strings.ContainsAny(req.Name, "\x00\n\r") {
		return child, expires, nil, bad("name", "at most %d bytes on one line", maxTokenName)
	}
	if req.Autonomy != nil && (*req.Autonomy < ReadOnly || *req.Autonomy > Full) {
		return child, expires, nil, bad("autonomy", "unknown level")
	}
	if req.MaxRequests != nil && *req.MaxRequests < 1 {
		return child, expires, nil, bad("max_requests", "want a number from 1")
	}
	for field, list := range map[string][]string{"allow_capabilities": req.AllowCapabilities, "deny_capabilities": req.DenyCapabilities} {
		for _, c := range list {
			if _, err := Lookup(c); err != nil {
				return child, expires, nil, &FieldError{Field: field, Err: err}
			}
		}
	}
	for name, pats := range req.Targets {
		c, err := Lookup(name)
		if err != nil {
			return child, expires, nil, &FieldError{Field: "targets", Err: err}
		}
		if c.TargetKind == KindNone {
			return child, expires, nil, bad("targets", "%s takes no target", name)
		}
		for _, p := range pats {
			if err := ValidateTarget(c, p); err != nil {
				return child, expires, nil, &FieldError{Field: "targets", Err: fmt.Errorf("%s: %w", name, err)}
			}
		}
	}

	// Autonomy: the minimum.
	child.Autonomy = parent.Autonomy
	if req.Autonomy != nil {
		child.Autonomy = MinLevel(*req.Autonomy, parent.Autonomy)
		if *req.Autonomy > parent.Autonomy {
			narrowed = append(narrowed, Narrowed{"autonomy", req.Autonomy.String(), parent.Autonomy.String()})
		}
	}
	// Allow lists: intersected.
	child.AllowCapabilities = slices.Clone(parent.AllowCapabilities)
	if len(req.AllowCapabilities) > 0 {
		kept := []string{}
		for _, c := range dedupe(req.AllowCapabilities) {
			if parent.AllowCapabilities == nil || slices.Contains(parent.AllowCapabilities, c) {
				kept = append(kept, c)
			} else {
				narrowed = append(narrowed, Narrowed{"allow_capabilities", c, nil})
			}
		}
		child.AllowCapabilities = kept
	}
	// Deny lists: united.
	child.DenyCapabilities = dedupe(append(slices.Clone(parent.DenyCapabilities), req.DenyCapabilities...))
	// Targets: intersected.
	if len(parent.Targets) > 0 || len(req.Targets) > 0 {
		child.Targets = map[string][]string{}
		for c, pats := range parent.Targets {
			child.Targets[c] = slices.Clone(pats)
		}
		names := make([]string, 0, len(req.Targets))
		for c := range req.Targets {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, name := range names {
			c, _ := Lookup(name)
			have, limited := parent.Targets[name]
			kept, refused := []string{}, []string{}
			for _, r := range dedupe(req.Targets[name]) {
				if !limited || n.covers(c, have, r) {
					kept = append(kept, r)
				} else {
					refused = append(refused, r)
				}
			}
			child.Targets[name] = kept
			// given is what the child holds for the capability (possibly
			// nothing), not the parent's patterns: the caller must not read
			// a refusal as the parent's wider patterns handed down.
			for _, r := range refused {
				narrowed = append(narrowed, Narrowed{"targets." + name, r, slices.Clone(kept)})
			}
		}
	}
	// max_requests: the minimum.
	child.MaxRequests = parent.MaxRequests
	if req.MaxRequests != nil {
		m := *req.MaxRequests
		if parent.MaxRequests != nil && m > *parent.MaxRequests {
			narrowed = append(narrowed, Narrowed{"max_requests", m, *parent.MaxRequests})
			m = *parent.MaxRequests
		}
		child.MaxRequests = &m
	}
	// Expiry: no later than the parent's.
	ttl := req.TTL
	if ttl > MaxTokenTTL {
		narrowed = append(narrowed, Narrowed{"ttl", req.TTL.String(), MaxTokenTTL.String()})
		ttl = MaxTokenTTL
	}
	expires = now.Add(ttl).UTC().Truncate(time.Microsecond)
	if parentExpires != nil && expires.After(*parentExpires) {
		narrowed = append(narrowed, Narrowed{"ttl", req.TTL.String(), "until " + parentExpires.UTC().Format(time.RFC3339)})
		expires = *parentExpires
	}
	if narrowed == nil {
		narrowed = []Narrowed{}
	}
	return child, expires, narrowed, nil
}

// covers reports whether the parent's target patterns have cover every
// target the child pattern r matches: r is one of them, or r is a literal
// target in canonical form that they permit. Anything else (a different
// glob) is refused: proving one glob inside another is not attempted.
func (n Normalizer) covers(c Capability, have []string, r string) bool {
	if slices.Contains(have, r) {
		return true
	}
	if c.Name == "code:exec" && !SingleCommand(r) {
		return false // permitted only by an equal pattern (see PermitsTarget)
	}
	if strings.ContainsAny(r, "*?[{\\") || r == "" {
		return false
	}
	switch c.TargetKind {
	case KindPathGlob:
		if n.cleanPath(r) != r {
			return false
		}
	case KindHost:
		if hostOf(r) != r {
			return false
		}
	}
	return Profile{Targets: map[string][]string{c.Name: have}}.PermitsTarget(n, c, r)
}

func dedupe(list []string) []string {
	out := []string{}
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Errors of child tokens.
var (
	// ErrTokenExhausted: the token (or an ancestor) made its max_requests.
	ErrTokenExhausted = errors.New("token has made its max_requests")
	// ErrTokenRevoked: the parent of a new token was revoked meanwhile.
	ErrTokenRevoked = errors.New("token revoked or expired")
)
