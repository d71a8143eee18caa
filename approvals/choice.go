package approvals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/policy"
)

// Choice is a decision with what it grants: the scope of Allow always
// (one of the request's Scopes; empty: its default, GrantTarget) and the
// while of Allow for (one of its AllowFor; zero: the first). Anything not
// offered on the request is refused (ErrNotOffered) and decides nothing.
type Choice struct {
	Decision Decision
	Scope    string
	Duration time.Duration
	// EveryAgent makes the grant of Allow always or Allow for the whole
	// principal's, for every agent; without it the grant is the request's
	// agent's only. Refused on a guarded route (ErrNotOffered).
	EveryAgent bool
}

// offers fills what r's card offers besides Allow once: the scopes of
// Allow always and the whiles of Allow for. Only capabilities whose
// default approval is per_target get either (seed 000: code:exec and
// mail:send are asked every time, and get no grant of any duration).
func (s *Service) offers(r *Request, kind policy.TargetKind, target, suggested string) {
	c, err := policy.Lookup(r.Capability)
	if err != nil || c.DefaultApproval != policy.ApprovalPerTarget {
		return
	}
	r.Scopes = s.grants.Normalizer().Scopes(kind, target, suggested)
	if !slices.Contains(r.Scopes, r.GrantTarget) { // GrantTarget is the default scope: always offered
		r.Scopes = append([]string{r.GrantTarget}, r.Scopes...)
	}
	for _, d := range s.opts.AllowFor {
		r.AllowFor = append(r.AllowFor, FormatWhile(d))
	}
}

// resolve checks choice against what r's card offers and returns the
// grant it writes: its target and lifetime (target "" for decisions that
// write none). Allow always with no scope takes GrantTarget; Allow for
// with no while takes the first offered.
func (s *Service) resolve(r *Request, ch Choice) (target string, ttl time.Duration, err error) {
	if ch.EveryAgent {
		switch {
		case ch.Decision != AllowAlways && ch.Decision != AllowFor:
			return "", 0, fmt.Errorf("%w: only Allow always and Allow for may be for every agent", ErrInvalid)
		case r.Guarded():
			return "", 0, fmt.Errorf("%w: a grant for every agent is not offered on a guarded route (quorum %d, step-up %q)",
				ErrNotOffered, r.Quorum, r.StepUp)
		}
	}
	switch ch.Decision {
	case AllowAlways:
		if !r.AllowAlwaysOffered() {
			return "", 0, fmt.Errorf("%w: %s needs approval every time; use Allow once, or an approve rule in the config",
				ErrAllowAlwaysRefused, r.Capability)
		}
		scope := ch.Scope
		if scope == "" {
			scope = r.GrantTarget
		}
		if scope != r.GrantTarget && !slices.Contains(r.Scopes, scope) {
			return "", 0, fmt.Errorf("%w: scope %q is not among this request's scopes", ErrNotOffered, scope)
		}
		return scope, s.opts.GrantTTL, nil
	case AllowFor:
		if len(r.AllowFor) == 0 {
			if !r.AllowAlwaysOffered() {
				return "", 0, fmt.Errorf("%w: %s needs approval every time; use Allow once",
					ErrAllowAlwaysRefused, r.Capability)
			}
			return "", 0, fmt.Errorf("%w: this request offers no Allow for", ErrNotOffered)
		}
		if ch.Duration == 0 {
			d, _ := ParseWhile(r.AllowFor[0])
			return r.GrantTarget, d, nil
		}
		for _, w := range r.AllowFor {
			if d, err := ParseWhile(w); err == nil && d == ch.Duration {
				return r.GrantTarget, d, nil
			}
		}
		return "", 0, fmt.Errorf("%w: Allow for %s is not offered on this request (offered: %s)",
			ErrNotOffered, FormatWhile(ch.Duration), strings.Join(r.AllowFor, ", "))
	case AllowSession:
		if !r.AllowSessionOffered() {
			if !r.AllowAlwaysOffered() {
				return "", 0, fmt.Errorf("%w: %s needs approval every time; use Allow once",
					ErrAllowAlwaysRefused, r.Capability)
			}
			return "", 0, fmt.Errorf("%w: this request names no session (or its capability gets no session grant)", ErrNotOffered)
		}
		if ch.Scope != "" || ch.Duration != 0 {
			return "", 0, fmt.Errorf("%w: allow_session takes no scope or duration", ErrInvalid)
		}
		return r.GrantTarget, s.opts.SessionTTL, nil
	}
	if ch.Scope != "" || ch.Duration != 0 {
		return "", 0, fmt.Errorf("%w: %s takes no scope or duration", ErrInvalid, ch.Decision)
	}
	return "", 0, nil
}

// FormatWhile writes d the short way people read it: "1h", "8h", "90m" as
// "1h30m", "2s".
func FormatWhile(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseWhile reads a while as FormatWhile writes it (any Go duration).
func ParseWhile(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: duration: %q is not a duration such as \"1h\"", ErrInvalid, s)
	}
	return d, nil
}

// quorumApproval is the decision a quorum reached, last being the approval
// that completed it: what every counted allow agreed to, and never more
// than any of them chose. All Allow always: the narrowest scope chosen
// (first in scopes); all Allow for: the shortest while; anything mixed:
// Allow once.
func quorumApproval(counted []Approval, last Approval, scopes []string) Approval {
	out := last
	rank := func(scope string) int {
		if i := slices.Index(scopes, scope); i >= 0 {
			return i
		}
		return -1 // the default scope of a request with no list: the only one
	}
	var shortest time.Duration
	for _, x := range counted {
		if x.Decision == Deny {
			continue
		}
		if x.Decision != out.Decision {
			out.Decision, out.Scope, out.For, out.EveryAgent = AllowOnce, "", "", false
			return out
		}
		out.EveryAgent = out.EveryAgent && x.EveryAgent
		switch x.Decision {
		case AllowAlways:
			if rank(x.Scope) < rank(out.Scope) {
				out.Scope = x.Scope
			}
		case AllowFor:
			if d, err := ParseWhile(x.For); err == nil && (shortest == 0 || d < shortest) {
				shortest, out.For = d, x.For
			}
		}
	}
	return out
}

// ChoiceOfScope sets ch's scope from an index into r's Scopes, as a card
// names it ("0" the narrowest): the messengers' buttons and the web
// page's select carry an index, never a pattern of their own. An index
// that is not on the list is refused (ErrNotOffered).
func ChoiceOfScope(r Request, ch Choice, index string) (Choice, error) {
	scopes := r.Scopes
	if len(scopes) == 0 {
		scopes = []string{r.GrantTarget}
	}
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(scopes) || strconv.Itoa(i) != index {
		return ch, fmt.Errorf("%w: scope %q is not among this request's %d scopes", ErrNotOffered, index, len(scopes))
	}
	ch.Scope = scopes[i]
	return ch, nil
}
