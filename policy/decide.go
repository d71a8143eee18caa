package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/vaglio"
)

// ErrInvalid is wrapped by every validation error of a request; the error
// text names the field ("capability: unknown capability \"fs:wirte\"").
var ErrInvalid = errors.New("invalid request")

// FieldError is a validation error that names the request field at fault.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap lets errors.Is find both ErrInvalid and the cause.
func (e *FieldError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

func invalid(field string, err error) error { return &FieldError{Field: field, Err: err} }

// Asker is a Vetter that also says which requests a person must see even
// where the autonomy table allows them (vaglio.Vaglio.MustAsk). always
// means only a person may allow it: no approve rule, no grant.
type Asker interface {
	MustAsk(r vaglio.Request) (reason string, always bool)
}

// Input is one request to decide.
type Input struct {
	Profile    Profile
	Capability string
	Target     string
	Requested  Level // 0 = the profile's ceiling
	Channel    string
	SenderID   string
	// SessionID is the agent's session (empty: none): session grants
	// match only their own agent's requests in their own session.
	SessionID string
	Intent    string
	Executor  string
	Args      map[string]any
	// Context is the request's declared context (the vaglio seed's:
	// mode, step, critical, …), for vaglio only.
	Context map[string]any
	// Ask, when set, says why this request needs a person whatever the
	// table, rules and grants would allow (a hook's tool input that names
	// two different paths: which one the tool uses is not known). Only a
	// denial beats it; no rule or grant turns it into allowed. The guard
	// asks the same way, every time, for fs:write on a persistence point
	// (Asker.MustAsk's always); Decision.AskAlways reports either.
	Ask string
	// Guard, when set, is the guarded route the request is on: no approve
	// rule lifts it, and only a grant that route's decision wrote (see
	// Guard).
	Guard *Guard
	// DryRun decides without side effects on grants (no last_used_at):
	// POST /v1/check and `gateway policy check`.
	DryRun bool
	// Basis, when set, lets the decision take the grants' and rules'
	// versions from the latest read of them, recording which in Basis: it
	// then stands only if the transaction storing its outcome finds them
	// unchanged (see storage.Basis). One that needs a person is returned
	// before the guard runs, to be made again without Basis.
	Basis *storage.Basis
}

// GrantFinder finds the active grant covering a target (see GrantStore).
type GrantFinder interface {
	// FindMatching's grant may be shared with other decisions (the
	// cache's): it is read and passed to Touch, never changed.
	FindMatching(ctx context.Context, p Principal, s Session, capability, target string) (*Grant, error)
	// Touch records that g decided a request (its last_used_at).
	Touch(ctx context.Context, g *Grant) error
}

// RuleSource gives the rules in force now, in evaluation order within each
// owner. The slice is shared: callers must not change it.
type RuleSource interface {
	Rules(ctx context.Context) ([]Rule, error)
}

// Vetter is the vaglio step: the guard and the judge.
type Vetter interface {
	Check(ctx context.Context, r vaglio.Request) vaglio.Verdict
}

// Decider computes effective outcomes (SPEC §4). All fields are read-only
// after construction, so one Decider serves concurrent requests.
type Decider struct {
	Rules []Rule
	// Source, when set, gives the rules of each decision instead of Rules:
	// the config file's and those added at run time (see RuleStore), read
	// fresh so a change takes effect on the very next decision.
	Source RuleSource
	Grants GrantFinder // nil: no grants
	Vaglio Vetter      // nil: no vaglio step
	Norm   Normalizer
	// Addrs resolves a host target's name where a rule or the guard
	// needs its addresses (see AddrCache); nil: names are not resolved.
	Addrs *AddrCache
}

// Validate checks the parts of a request that need no state (SPEC §4 step 1)
// and returns the capability.
func Validate(in Input) (Capability, error) {
	c, _, err := validate(in)
	return c, err
}

// validate is Validate, also answering what a host target names (the
// zero HostTarget for other kinds): a decision parses its target once.
func validate(in Input) (Capability, HostTarget, error) {
	c, err := Lookup(in.Capability)
	if err != nil {
		return Capability{}, HostTarget{}, invalid("capability", err)
	}
	if in.Requested != 0 && (in.Requested < ReadOnly || in.Requested > Full) {
		return Capability{}, HostTarget{}, invalid("autonomy", fmt.Errorf("%w %d", ErrUnknownLevel, int(in.Requested)))
	}
	if err := ValidateTarget(c, in.Target); err != nil {
		return Capability{}, HostTarget{}, invalid("target", err)
	}
	var h HostTarget
	if c.TargetKind == KindHost {
		if h, err = ParseHost(in.Target); err != nil {
			return Capability{}, HostTarget{}, invalid("target", fmt.Errorf("%w: %w", ErrBadTarget, err))
		}
	}
	if in.Profile.Ceiling < ReadOnly || in.Profile.Ceiling > Full {
		return Capability{}, HostTarget{}, invalid("agent", fmt.Errorf("agent %q has no valid autonomy ceiling", in.Profile.Agent))
	}
	return c, h, nil
}

// Decide computes the effective outcome. An error means the request is
// invalid (errors.Is ErrInvalid) or storage failed; either way nothing is
// allowed.
func (d *Decider) Decide(ctx context.Context, in Input) (Decision, error) {
	// The rules and the grants are read as of a moment after now (see
	// storage.Arrived), or on in.Basis: one read of their versions can
	// serve both.
	ctx = storage.ArrivedOn(ctx, time.Now(), in.Basis)
	ctx, span := telemetry.Start(ctx, "policy")
	// dec is this call's decision: every return below returns it, or
	// an error (then its trace is what was decided until then).
	var dec Decision
	defer func() {
		if span.Recording() {
			span.String(telemetry.KeyLayers, layersOf(dec.Trace))
		}
		span.End()
	}()
	c, host, err := validate(in)
	if err != nil {
		span.Fail("invalid request")
		return Decision{}, err
	}
	span.String(telemetry.KeyCapability, c.Name)
	// Rules, grants and the guard see a host target as the host it
	// reaches ("http:evil.com。" is evil.com), canonicalised once here.
	target := in.Target
	if c.TargetKind == KindHost {
		target = host.Host
	}
	// Room for the common path's steps (commonSteps); with a guard, the
	// trace and the verdict are one allocation.
	dec = Decision{Capability: c}
	var verdict *vaglio.Verdict
	if d.Vaglio != nil {
		a := new(stepsAndVerdict)
		dec.Trace, verdict = a.steps[:0], &a.verdict
	} else {
		dec.Trace = make([]Step, 0, commonSteps)
	}
	step := func(layer string, o Outcome, detail string) {
		dec.Trace = append(dec.Trace, Step{Layer: layer, Outcome: o, Detail: detail})
	}
	trace := func(layer string, o Outcome, format string, args ...any) {
		step(layer, o, fmt.Sprintf(format, args...))
	}
	deny := func(by, reason string) Decision {
		dec.Outcome, dec.Reason, dec.BlockedBy = Denied, reason, by
		span.String(telemetry.KeyOutcome, string(Denied))
		span.String(telemetry.KeyBlockedBy, by)
		return dec
	}

	// Step 2: the agent profile, restrictive only.
	level := in.Profile.Ceiling
	if in.Requested != 0 {
		level = MinLevel(in.Requested, in.Profile.Ceiling)
	}
	dec.Autonomy = level
	// The trace's words, with room for a grant's, likely to be needed.
	var words traceWords
	room := 0
	if d.Grants != nil && c.DefaultApproval != ApprovalAlways {
		room = grantRoom + len(in.Target) + len(in.Channel) + len(in.SenderID)
	}
	profileWords, tableWords := cachedProfileWords(&words, in.Profile.Agent, in.Requested, in.Profile.Ceiling, level, c.Name, room)
	step("profile", "", profileWords)
	// Whose lists these are: the agent's, or a child token's (narrowed);
	// spelt out only for a denial.
	whoIs := func() (who, whose string) {
		if in.Profile.Token != "" {
			return "token " + in.Profile.Token + " of agent " + in.Profile.Agent, "the token's"
		}
		return "agent " + in.Profile.Agent, "the agent's"
	}
	if slices.Contains(in.Profile.Deny, c.Name) {
		who, whose := whoIs()
		trace("profile", Denied, "%s is in %s deny_capabilities", c.Name, whose)
		return deny(BlockedByPolicy, fmt.Sprintf("%s is denied to %s", c.Name, who)), nil
	}
	if in.Profile.AllowNone || len(in.Profile.Allow) > 0 && !slices.Contains(in.Profile.Allow, c.Name) {
		who, whose := whoIs()
		trace("profile", Denied, "%s is not in %s allow_capabilities", c.Name, whose)
		return deny(BlockedByPolicy, fmt.Sprintf("%s is outside the allowed capabilities of %s", c.Name, who)), nil
	}
	if !in.Profile.PermitsTarget(d.Norm, c, target) {
		trace("profile", Denied, "the target is outside token %s's targets for %s", in.Profile.Token, c.Name)
		return deny(BlockedByPolicy, fmt.Sprintf("the target is outside the targets token %s may ask for with %s",
			in.Profile.Token, c.Name)), nil
	}

	// Step 3: the table.
	dec.Table = TableOutcome(level, c)
	step("table", dec.Table, tableWords)
	if dec.Table == Denied {
		return deny(BlockedByPolicy, fmt.Sprintf("%s is denied at autonomy %s", c.Name, level)), nil
	}
	// What the table allows may still need a person. Two kinds of asks
	// need one every time (always: no approve rule, no grant allows them,
	// dec.AskAlways): in.Ask (a hook's tool input naming two paths or
	// hosts) and fs:write on a persistence point. Two need one where the
	// table would allow, and an approve rule or a grant may still allow
	// them: a search or listing of a tree holding a forbidden path, a path
	// outside the agent's workspace.
	table, ask, always := dec.Table, in.Ask, in.Ask != ""
	if ask == "" && c.TargetKind == KindPathGlob {
		if a, ok := d.Vaglio.(Asker); ok {
			ask, always = a.MustAsk(vaglio.Request{Agent: in.Profile.Agent, Capability: c.Name, Target: in.Target, Home: in.Profile.Home})
		}
		if ask == "" && !in.Profile.InWorkspace(d.Norm, in.Target) {
			ask = "the path is outside the agent's workspace"
		}
	}
	if ask != "" {
		table, dec.AskAlways = ApprovalRequired, always
		step("ask", ApprovalRequired, ask)
	}

	// Step 4: the rules.
	rules := d.Rules
	if d.Source != nil {
		if rules, err = d.Source.Rules(ctx); err != nil {
			return Decision{}, fmt.Errorf("decide: %w", err)
		}
	}
	var addrs []string
	if c.TargetKind == KindHost {
		if addrs, err = d.hostAddrs(ctx, c, host, rules); err != nil {
			trace("rules", Denied, "%s: %v", host.Host, err)
			return deny(BlockedByGuard, "guard: "+host.Host+": "+err.Error()+"; denied rather than unchecked"), nil
		}
	}
	// The target as rules and grants are matched against, read once for
	// all of them.
	subject := d.Norm.subject(c.TargetKind, target)
	m := evalRulesTo(d.Norm, rules, RuleSubject{
		Capability: c, Target: target, Agent: in.Profile.Agent, Channel: in.Channel, SenderID: in.SenderID, Addrs: addrs,
	}, subject)
	if m.Rule != nil {
		trace("rules", "", "rule %s (%s, capability %q, target %q) says %s",
			m.Rule.Label(), m.Rule.Owner(), m.Rule.Capability, m.Rule.Target, m.Action)
	} else {
		step("rules", "", "no rule matched")
	}
	route := ""
	if in.Guard != nil {
		route = in.Guard.Key
		if m.Action == ActionApprove {
			trace("rules", "", "rule %s %s: it was not decided the route's way", m.Rule.Label(), in.Guard.NotLifted())
			m = RuleMatch{}
		}
	}

	dec.Rule = m.Rule
	// Step 5: combine.
	var grant *Grant
	var grantAt time.Time // when the cache found grant unexpired; zero: not known
	switch {
	case m.Action == ActionBlock:
		return deny(BlockedByPolicy, "blocked by rule "+m.Rule.Label()), nil
	case always:
		// Only a person, every time; Input.Ask's reason is shown as given.
		dec.Outcome, dec.Reason = ApprovalRequired, ask
		if in.Ask == "" {
			dec.Reason = c.Name + " needs approval: " + ask
		}
		step("grants", "", "not consulted: a person decides every time")
	case table == Allowed && m.Action == ActionRequireApproval:
		dec.Outcome, dec.Reason = ApprovalRequired, "rule "+m.Rule.Label()+" requires approval"
	case table == Allowed:
		dec.Outcome, dec.Reason = Allowed, c.Name+" is allowed at autonomy "+level.String()
	case m.Action == ActionApprove:
		dec.Outcome, dec.Reason = Allowed, "approved by rule "+m.Rule.Label()
	default:
		dec.Outcome = ApprovalRequired
		if m.Action == ActionRequireApproval {
			// A require_approval rule means "ask every time": grants do not lift it.
			trace("grants", "", "not consulted: rule %s requires approval", m.Rule.Label())
		} else if d.Grants != nil && c.DefaultApproval != ApprovalAlways {
			gctx, gspan := telemetry.Start(ctx, "policy.grants")
			g, gw, foundAt, err := d.findGrant(gctx, Principal{in.Channel, in.SenderID}, Session{in.Profile.Agent, in.SessionID, route}, c, target, subject)
			gspan.End()
			if err != nil {
				return Decision{}, fmt.Errorf("decide: %w", err)
			}
			if g != nil {
				grant, grantAt = g, foundAt
				dec.Outcome, dec.GrantID = Allowed, g.ID
				if gw.reason == "" {
					gw.reason, gw.detail = words.grant(g.ID, g.Target, in.Channel, in.SenderID)
				}
				dec.Reason = gw.reason
				step("grants", Allowed, gw.detail)
			} else if in.Guard != nil {
				trace("grants", "", "no active grant of %s for %s/%s: any other grant %s", in.Guard.Label,
					in.Channel, in.SenderID, in.Guard.NotLifted())
			} else {
				step("grants", "", "no active grant for "+in.Channel+"/"+in.SenderID)
			}
		}
		if dec.GrantID == 0 { // no grant allowed it: written once it is known
			dec.Reason = c.Name + " needs approval at autonomy " + level.String()
			if ask != "" {
				dec.Reason = c.Name + " needs approval: " + ask
			}
		}
	}
	step("combine", dec.Outcome, dec.Reason)
	if dec.Outcome == ApprovalRequired && in.Profile.Mode.Restricts() {
		step("mode", Denied, "restrict: no person is asked")
		return deny(BlockedByPolicy, RestrictReason), nil
	}
	if dec.Outcome == ApprovalRequired && in.Basis.Pinned() {
		return dec, nil // made again without Basis: the guard (and its judge) runs once
	}

	// Step 6: vaglio on anything not denied.
	if d.Vaglio != nil {
		*verdict = d.Vaglio.Check(ctx, vaglio.Request{
			Agent: in.Profile.Agent, Capability: c.Name, Critical: c.Critical, Target: in.Target,
			Host: host.Host, Port: host.Port, Addrs: addrs, Intent: in.Intent, Executor: in.Executor, Args: in.Args, Context: in.Context,
			Home: in.Profile.Home,
		})
		dec.Vaglio = verdict
		v := verdict
		if !v.Approved {
			by := v.BlockedBy
			if by == "" {
				by = BlockedByJudge
			}
			trace("vaglio", Denied, "%s: %s", by, v.Reason)
			dec.GrantID = 0
			return deny(by, "vaglio "+by+": "+strings.TrimPrefix(v.Reason, by+": ")), nil
		}
		if v.Reason != "" { // "approved: score 0.80 (…)", the score included
			step("vaglio", "", v.Reason)
		} else {
			trace("vaglio", "", "score %.2f", v.Score)
		}
		if v.Unscored != "" && dec.Outcome == Allowed {
			// The configured judge did not score it (on_failure = "ask"):
			// what it would have allowed, a person decides, grant or not;
			// in restrict mode nobody is asked, so it is denied.
			dec.Outcome, dec.GrantID, grant = ApprovalRequired, 0, nil
			dec.Reason = v.Unscored + "; a person decides"
			step("vaglio", ApprovalRequired, dec.Reason)
			if in.Profile.Mode.Restricts() {
				step("mode", Denied, "restrict: no person is asked")
				return deny(BlockedByPolicy, RestrictReason+" ("+v.Unscored+")"), nil
			}
		}
	}
	if grant != nil && !in.DryRun {
		if err := d.touch(ctx, grant, grantAt); err != nil {
			return Decision{}, fmt.Errorf("decide: %w", err)
		}
	}
	span.String(telemetry.KeyOutcome, string(dec.Outcome))
	return dec, nil
}

// findGrant is d.Grants.FindMatching for capability c; t is the target's
// subject as d.Norm reads it. A GrantCache reading targets as d.Norm does
// takes t as it is, and also answers the words of a decision the grant
// allows, written once per grant.
func (d *Decider) findGrant(ctx context.Context, p Principal, ss Session, c Capability, target, t string) (*Grant, grantWords, time.Time, error) {
	if gc, ok := d.Grants.(*GrantCache); ok && gc.store.norm == d.Norm {
		return gc.findWithWords(ctx, p, ss, c, target, t)
	}
	g, err := d.Grants.FindMatching(ctx, p, ss, c.Name, target)
	return g, grantWords{}, time.Time{}, err
}

// touch is d.Grants.Touch; a GrantCache that found g at a known time
// takes it as the time of the use, without reading the clock again.
func (d *Decider) touch(ctx context.Context, g *Grant, at time.Time) error {
	if gc, ok := d.Grants.(*GrantCache); ok && !at.IsZero() {
		return gc.touchAt(ctx, g, at)
	}
	return d.Grants.Touch(ctx, g)
}

// commonSteps is how many steps the common path traces: profile, table,
// rules, grants, combine and vaglio.
const commonSteps = 6

// stepsAndVerdict is what a decision with a guard carries: room for the
// six steps of its common path, and the guard's verdict.
type stepsAndVerdict struct {
	steps   [commonSteps]Step
	verdict vaglio.Verdict
}

func levelOr(l Level, def string) string {
	if l == 0 {
		return def
	}
	return l.String()
}
