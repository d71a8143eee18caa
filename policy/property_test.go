package policy_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/shell"
	"github.com/metnos/gateway/policy"
)

// Property tests: rules that must hold for all inputs (STYLE.md "Tests").
// Each run uses a fresh seed, logged so a failure can be replayed with
// POLICY_PROPERTY_SEED=<seed>.

func propertySeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("POLICY_PROPERTY_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("POLICY_PROPERTY_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (replay with POLICY_PROPERTY_SEED=%d)", seed, seed)
	return seed
}

func propertyCases(full, short int) int {
	if testing.Short() {
		return short
	}
	return full
}

// gen draws random requests, rules and grants from small pools chosen so
// that patterns and targets often meet.
type gen struct{ r *rand.Rand }

func newGen(seed uint64) gen { return gen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))} }

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }
func (g gen) chance(p float64) bool   { return g.r.Float64() < p }

var (
	pathSegs     = []string{"home", "r", "a", "b", "inv", "..", ".", "", "*", "password.txt", "x.pdf", ".ssh", "id_rsa", "~", "**"}
	pathPatterns = []string{"/home/r/**", "/home/r/a/*", "~/a/*", "/home/r/inv/*.pdf", "*password*", "/*", "/home/r/a/x.pdf",
		"*", "x.pdf", "/home/r/*/x.pdf", "/home/**/id_rsa", "~/.ssh/*", "/home/r/a/[xy].pdf"}
	hostTargets = []string{"api.example.com", "a.b.example.com", "example.com", "badexample.com",
		"https://API.example.com:8443/x", "password.example.org", "evil.com", "EXAMPLE.com", "http://a.example.com/"}
	hostPatterns  = []string{"*.example.com", "api.example.com", "example.com", "*.com", "*", "evil.com", "*password*", "api.*"}
	exactTargets  = []string{"git status --short", "git push", "INBOX", "rm -rf /tmp/x", "general", "git status", "a*b"}
	exactPatterns = []string{"git status*", "git *", "INBOX", "*", "gen?ral", "*push*", "a*b"}
	capPatterns   = []string{"*", "fs:*", "mail:*", "llm:*", "code:*", "channel:*", "network:*"}
	allNames      = func() []string {
		var out []string
		for _, c := range policy.Registry() {
			out = append(out, c.Name)
		}
		return out
	}()
	grantableNames = func() []string {
		var out []string
		for _, c := range policy.Registry() {
			if c.DefaultApproval != policy.ApprovalAlways {
				out = append(out, c.Name)
			}
		}
		return out
	}()
	allRulePatterns = slices.Concat(pathPatterns, hostPatterns, exactPatterns, []string{""})
	actions         = []policy.Action{policy.ActionApprove, policy.ActionRequireApproval, policy.ActionBlock}
)

func (g gen) path() string {
	var b strings.Builder
	switch g.r.IntN(6) {
	case 0:
		b.WriteString("~/")
	case 1: // relative
	default:
		b.WriteString("/")
	}
	for i := range 1 + g.r.IntN(6) {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(g.pick(pathSegs))
	}
	return b.String()
}

func (g gen) target(kind policy.TargetKind) string {
	switch kind {
	case policy.KindPathGlob:
		if g.chance(0.3) {
			return g.pick([]string{"/home/r/a/x.pdf", "/home/r/inv/04.pdf", "~/a/x.pdf", "/home/r/.ssh/id_rsa", "/home/x/password.txt"})
		}
		return g.path()
	case policy.KindHost:
		return g.pick(hostTargets)
	case policy.KindExact:
		return g.pick(exactTargets)
	}
	return g.pick([]string{"", "x"})
}

func (g gen) grantPattern(kind policy.TargetKind) string {
	switch kind {
	case policy.KindPathGlob:
		if g.chance(0.5) {
			return g.pick(pathPatterns)
		}
		return g.path()
	case policy.KindHost:
		return g.pick(hostPatterns)
	case policy.KindExact:
		return g.pick(exactTargets)
	}
	return ""
}

func (g gen) rules() []policy.Rule {
	rs := make([]policy.Rule, g.r.IntN(7))
	for i := range rs {
		r := policy.Rule{Index: i, Action: actions[g.r.IntN(len(actions))], Target: g.pick(allRulePatterns)}
		if g.chance(0.5) {
			r.Capability = g.pick(capPatterns)
		} else {
			r.Capability = g.pick(allNames)
		}
		if g.chance(0.1) {
			r.Target = g.path()
		}
		if g.chance(0.25) {
			r.SenderID = g.pick([]string{"roberto", "anna"})
		}
		if g.chance(0.25) {
			r.Agent = g.pick([]string{"metnos", "other"})
		}
		if g.chance(0.25) {
			r.Channel = g.pick([]string{"telegram", "slack"})
		}
		rs[i] = r
	}
	return rs
}

func (g gen) principal() policy.Principal {
	return policy.Principal{Channel: g.pick([]string{"telegram", "slack"}), SenderID: g.pick([]string{"roberto", "anna"})}
}

func (g gen) subset(names []string) []string {
	var out []string
	for range 1 + g.r.IntN(3) {
		out = append(out, g.pick(names))
	}
	return out
}

func (g gen) input() policy.Input {
	p := g.principal()
	in := policy.Input{
		Profile:    policy.Profile{Agent: g.pick([]string{"metnos", "other"}), Ceiling: policy.Level(1 + g.r.IntN(3))},
		Requested:  policy.Level(g.r.IntN(4)),
		Capability: g.pick(allNames),
		Channel:    p.Channel,
		SenderID:   p.SenderID,
		DryRun:     g.chance(0.5),
	}
	if g.chance(0.3) {
		in.Profile.Mode = policy.ModeRestrict
	}
	if g.chance(0.1) {
		in.Profile.Allow = g.subset(allNames)
	}
	if g.chance(0.1) {
		in.Profile.Deny = g.subset(allNames)
	}
	c, _ := policy.Lookup(in.Capability)
	in.Target = g.target(c.TargetKind)
	if g.chance(0.01) {
		in.Capability = "fs:wirte"
	}
	return in
}

// grantFor draws a grant, biased towards the request's principal and
// capability so that grants often apply.
func (g gen) grantFor(in policy.Input) (policy.Principal, string, string) {
	p := g.principal()
	if g.chance(0.5) {
		p = policy.Principal{Channel: in.Channel, SenderID: in.SenderID}
	}
	name := g.pick(grantableNames)
	if c, err := policy.Lookup(in.Capability); err == nil && c.DefaultApproval != policy.ApprovalAlways && g.chance(0.5) {
		name = in.Capability
	}
	c, _ := policy.Lookup(name)
	target := g.grantPattern(c.TargetKind)
	if c.TargetKind == policy.KindPathGlob && g.chance(0.2) {
		target = in.Target // an exact grant on what is being asked
	}
	return p, name, target
}

// refGrant is a grant as the reference model sees it.
type refGrant struct {
	id         int64
	p          policy.Principal
	capability string
	pattern    string
}

// refCapMatch is an independent reading of a rule's capability pattern.
func refCapMatch(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && strings.HasSuffix(prefix, ":") {
		return strings.HasPrefix(name, prefix)
	}
	return pattern == name
}

// refFirstMatches returns, per owner, the first rule in file order that
// matches the request (nil when none does).
func refFirstMatches(n policy.Normalizer, rules []policy.Rule, c policy.Capability, in policy.Input) (user, org *policy.Rule) {
	for i := range rules {
		r := &rules[i]
		scoped := r.SenderID != "" || r.Agent != "" || r.Channel != ""
		if scoped && user != nil || !scoped && org != nil {
			continue
		}
		if _, single := shell.Single(in.Target, 0); r.Action == policy.ActionApprove && c.Name == "code:exec" && !single {
			continue // an approve glob covers only what bash reads as one plain command
		}
		if !refCapMatch(r.Capability, c.Name) ||
			r.SenderID != "" && r.SenderID != in.SenderID ||
			r.Agent != "" && r.Agent != in.Profile.Agent ||
			r.Channel != "" && r.Channel != in.Channel ||
			!n.MatchRule(c.TargetKind, r.Target, in.Target) {
			continue
		}
		if scoped {
			user = r
		} else {
			org = r
		}
	}
	return user, org
}

// reference is SPEC §4 steps 1–5 written out independently of Decide, and
// then the agent's mode: restrict denies what a person would be asked
// about. It returns the expected outcome, the grant that should decide it
// (0 if none), and whether the request is invalid.
func reference(n policy.Normalizer, rules []policy.Rule, grants []refGrant, in policy.Input) (policy.Outcome, int64, bool) {
	o, grant, invalid := referenceAsk(n, rules, grants, in)
	if o == policy.ApprovalRequired && in.Profile.Mode == policy.ModeRestrict {
		return policy.Denied, 0, false
	}
	return o, grant, invalid
}

func referenceAsk(n policy.Normalizer, rules []policy.Rule, grants []refGrant, in policy.Input) (policy.Outcome, int64, bool) {
	c, err := policy.Lookup(in.Capability)
	if err != nil || in.Target == "" && c.TargetKind != policy.KindNone {
		return "", 0, true
	}
	level := in.Profile.Ceiling
	if in.Requested != 0 && in.Requested < level {
		level = in.Requested
	}
	if slices.Contains(in.Profile.Deny, c.Name) || len(in.Profile.Allow) > 0 && !slices.Contains(in.Profile.Allow, c.Name) {
		return policy.Denied, 0, false
	}
	table := policy.TableOutcome(level, c)
	if table == policy.Denied {
		return policy.Denied, 0, false
	}
	for _, r := range rules { // a block rule wins wherever it stands
		if r.Action == policy.ActionBlock && refCapMatch(r.Capability, c.Name) &&
			(r.SenderID == "" || r.SenderID == in.SenderID) && (r.Agent == "" || r.Agent == in.Profile.Agent) &&
			(r.Channel == "" || r.Channel == in.Channel) && n.MatchRule(c.TargetKind, r.Target, in.Target) {
			return policy.Denied, 0, false
		}
	}
	user, org := refFirstMatches(n, rules, c, in)
	sev := map[policy.Action]int{"": 0, policy.ActionApprove: 1, policy.ActionRequireApproval: 2, policy.ActionBlock: 3}
	var act policy.Action
	for _, r := range []*policy.Rule{user, org} {
		if r != nil && sev[r.Action] > sev[act] {
			act = r.Action
		}
	}
	switch {
	case act == policy.ActionBlock:
		return policy.Denied, 0, false
	case table == policy.Allowed && act == policy.ActionRequireApproval:
		return policy.ApprovalRequired, 0, false
	case table == policy.Allowed, act == policy.ActionApprove:
		return policy.Allowed, 0, false
	}
	if c.DefaultApproval != policy.ApprovalAlways && act != policy.ActionRequireApproval {
		for _, g := range grants {
			if g.p.Channel == in.Channel && g.p.SenderID == in.SenderID && g.capability == c.Name &&
				n.MatchGrant(c.TargetKind, g.pattern, in.Target) {
				return policy.Allowed, g.id, false
			}
		}
	}
	return policy.ApprovalRequired, 0, false
}

// checkDecision asserts the properties of one decision; it returns a
// description of the first violation, or "".
func checkDecision(n policy.Normalizer, rules []policy.Rule, grants []refGrant, in policy.Input, dec policy.Decision, err error) string {
	want, wantGrant, invalid := reference(n, rules, grants, in)
	if invalid || err != nil {
		if !invalid || !errors.Is(err, policy.ErrInvalid) {
			return "validation: err=" + errString(err) + " want invalid=" + strconv.FormatBool(invalid)
		}
		return ""
	}
	c, _ := policy.Lookup(in.Capability)
	eff := in.Profile.Ceiling
	if in.Requested != 0 {
		eff = policy.MinLevel(in.Requested, in.Profile.Ceiling)
	}
	// 1. Nothing turns the table's denied into allowed.
	if policy.TableOutcome(eff, c) == policy.Denied && dec.Outcome != policy.Denied {
		return "table says denied at " + eff.String() + " but Decide says " + string(dec.Outcome)
	}
	// 2. The effective autonomy never exceeds the ceiling.
	if dec.Autonomy > in.Profile.Ceiling || dec.Autonomy != eff {
		return "autonomy " + dec.Autonomy.String() + " with ceiling " + in.Profile.Ceiling.String()
	}
	// 3. A block rule that matches always denies, wherever it stands.
	for _, r := range rules {
		if r.Action == policy.ActionBlock && refCapMatch(r.Capability, c.Name) &&
			(r.SenderID == "" || r.SenderID == in.SenderID) && (r.Agent == "" || r.Agent == in.Profile.Agent) &&
			(r.Channel == "" || r.Channel == in.Channel) && n.MatchRule(c.TargetKind, r.Target, in.Target) &&
			dec.Outcome != policy.Denied {
			return "block rule #" + strconv.Itoa(r.Index+1) + " matched but Decide says " + string(dec.Outcome)
		}
	}
	user, org := refFirstMatches(n, rules, c, in)
	if (user != nil && user.Action == policy.ActionBlock || org != nil && org.Action == policy.ActionBlock) && dec.Outcome != policy.Denied {
		return "a block rule matched but Decide says " + string(dec.Outcome)
	}
	// 4. The whole outcome agrees with the reference model.
	if dec.Outcome != want || dec.GrantID != wantGrant {
		return "outcome " + string(dec.Outcome) + " grant " + strconv.FormatInt(dec.GrantID, 10) +
			", reference says " + string(want) + " grant " + strconv.FormatInt(wantGrant, 10) + " (" + dec.Reason + ")"
	}
	if dec.Outcome == policy.Denied && dec.BlockedBy != policy.BlockedByPolicy {
		return "denied with blocked_by " + dec.BlockedBy
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

func describe(rules []policy.Rule, grants []refGrant, in policy.Input) string {
	var b strings.Builder
	b.WriteString("\ninput: ")
	b.WriteString(strconv.Quote(in.Capability) + " " + strconv.Quote(in.Target) + " requested=" + in.Requested.String() +
		" ceiling=" + in.Profile.Ceiling.String() + " agent=" + in.Profile.Agent + " principal=" + in.Channel + "/" + in.SenderID +
		" mode=" + string(in.Profile.Mode) + " allow=" + strings.Join(in.Profile.Allow, ",") + " deny=" + strings.Join(in.Profile.Deny, ","))
	for _, r := range rules {
		b.WriteString("\nrule: " + r.Capability + " " + strconv.Quote(r.Target) + " " + string(r.Action) +
			" sender=" + r.SenderID + " agent=" + r.Agent + " channel=" + r.Channel)
	}
	for _, g := range grants {
		b.WriteString("\ngrant " + strconv.FormatInt(g.id, 10) + ": " + g.p.Channel + "/" + g.p.SenderID + " " + g.capability + " " + strconv.Quote(g.pattern))
	}
	return b.String()
}

func TestProperty_NothingTurnsDeniedIntoAllowed(t *testing.T) {
	seed := propertySeed(t)
	g := newGen(seed)
	n := testNorm
	finder := &fakeFinder{norm: n}
	d := &policy.Decider{Grants: finder, Norm: n}
	ctx := context.Background()
	stats := map[string]int{}
	cases := propertyCases(100_000, 2_000)
	for i := range cases {
		in := g.input()
		d.Rules = g.rules()
		finder.grants = finder.grants[:0]
		var refs []refGrant
		for range g.r.IntN(5) {
			p, name, target := g.grantFor(in)
			id := finder.add(p, name, target)
			refs = append(refs, refGrant{id, p, name, target})
		}
		dec, err := d.Decide(ctx, in)
		if msg := checkDecision(n, d.Rules, refs, in, dec, err); msg != "" {
			t.Fatalf("case %d (seed %d): %s%s", i, seed, msg, describe(d.Rules, refs, in))
		}
		switch {
		case err != nil:
			stats["invalid"]++
		case dec.GrantID != 0:
			stats["allowed by grant"]++
		case dec.Outcome == policy.Denied && dec.Table != policy.Denied && dec.Table != "":
			stats["denied by rule"]++
		default:
			stats[string(dec.Outcome)]++
		}
	}
	t.Logf("%d cases: %v", cases, stats)
	for _, k := range []string{"allowed by grant", "denied by rule", "approval_required", "allowed", "denied"} {
		if stats[k] == 0 && cases >= 2_000 {
			t.Errorf("no case ended %q: the generator does not exercise it", k)
		}
	}
}

// TestProperty_NothingTurnsDeniedIntoAllowed_SQLite runs the same property
// against the real grants store, so the anchor index is checked against the
// reference's linear scan too.
func TestProperty_NothingTurnsDeniedIntoAllowed_SQLite(t *testing.T) {
	seed := propertySeed(t)
	g := newGen(seed)
	clk := newClock()
	s, _ := newStore(t, clk.Now)
	ctx := context.Background()
	// One world of grants, some revoked and some expired by the time of the decisions.
	var refs []refGrant
	for range 400 {
		p, name, target := g.grantFor(g.input())
		if name == "fs:read" || name == "fs:write" {
			if g.chance(0.3) {
				target = g.target(policy.KindPathGlob)
			}
		}
		ttl := time.Duration(0)
		if g.chance(0.2) {
			ttl = time.Duration(1+g.r.IntN(120)) * time.Minute
		}
		gr, err := s.Record(ctx, policy.NewGrant{Principal: p, Capability: name, Target: target, GrantedBy: "prop", TTL: ttl})
		if err != nil {
			if errors.Is(err, policy.ErrBadTarget) {
				continue
			}
			t.Fatalf("Record: %v", err)
		}
		if g.chance(0.1) {
			if _, err := s.Revoke(ctx, gr.ID, "", "prop"); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Add(time.Hour)
	all, err := s.List(ctx, policy.GrantFilter{All: true})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b policy.Grant) int { return int(a.ID - b.ID) })
	for _, gr := range all {
		if gr.Active {
			refs = append(refs, refGrant{gr.ID, policy.Principal{Channel: gr.Channel, SenderID: gr.SenderID}, gr.Capability, gr.Target})
		}
	}
	t.Logf("%d grants, %d active", len(all), len(refs))
	d := &policy.Decider{Grants: s, Norm: testNorm}
	byGrant := 0
	cases := propertyCases(2_000, 300)
	for i := range cases {
		in := g.input()
		// Ask about the stored targets too, not only random ones.
		if c, err := policy.Lookup(in.Capability); err == nil && c.TargetKind == policy.KindPathGlob && g.chance(0.3) {
			in.Target = g.pick([]string{"/home/r/a/x.pdf", "/home/r/inv/04.pdf", "/home/r/a/b", "/home/r/x.pdf"})
		}
		d.Rules = g.rules()
		if g.chance(0.5) {
			d.Rules = nil
		}
		dec, err := d.Decide(ctx, in)
		if msg := checkDecision(testNorm, d.Rules, refs, in, dec, err); msg != "" {
			t.Fatalf("case %d (seed %d): %s%s", i, seed, msg, describe(d.Rules, nil, in))
		}
		if dec.GrantID != 0 {
			byGrant++
		}
	}
	t.Logf("%d cases, %d allowed by a grant", cases, byGrant)
	if byGrant == 0 {
		t.Error("no case was allowed by a grant: the generator does not exercise the store")
	}
}

// expandClean is the cleaning SPEC §4 describes, written independently:
// "~" expanded, then path.Clean. A relative path that cleans to a leading
// "~" (x/../~/y) names ./~/y, not the home directory, and is written so.
func expandClean(home, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	if p == "" {
		return ""
	}
	p = path.Clean(p)
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = "./" + p
	}
	return p
}

// insideGrant reports whether a cleaned path stays where a grant pattern
// of the form <dir>/* or <dir>/** says it may be.
func insideGrant(pattern, cleaned string) bool {
	switch {
	case strings.HasSuffix(pattern, "/**"):
		dir := strings.TrimSuffix(pattern, "/**")
		return cleaned == dir || strings.HasPrefix(cleaned, dir+"/")
	case strings.HasSuffix(pattern, "/*"):
		dir := strings.TrimSuffix(pattern, "/*")
		rest, ok := strings.CutPrefix(cleaned, dir+"/")
		return ok && rest != "" && !strings.Contains(rest, "/")
	}
	panic("insideGrant: unsupported pattern " + pattern)
}

func TestProperty_PathGrantNeverEscapes(t *testing.T) {
	seed := propertySeed(t)
	g := newGen(seed)
	segs := []string{"..", ".", "", "*", "**", "base", "dir", "x", ".ssh", "id_rsa", "~", "?", "[a]", "{x,y}", `\`}
	cases := propertyCases(100_000, 2_000)
	matched := map[string]int{}
	for _, home := range []string{"/home/r", "/base/dir", "/base"} {
		n := policy.Normalizer{Home: home}
		for i := range cases / 3 {
			var b strings.Builder
			switch g.r.IntN(4) {
			case 0:
				b.WriteString("~/")
			case 1:
				b.WriteString("/base/dir/")
			default:
				b.WriteString("/")
			}
			for j := range g.r.IntN(7) {
				if j > 0 {
					b.WriteByte('/')
				}
				b.WriteString(g.pick(segs))
			}
			target := b.String()
			cleaned := expandClean(home, target)
			for _, pattern := range []string{"/base/dir/*", "/base/**", "~/*"} {
				if !n.MatchGrant(policy.KindPathGlob, pattern, target) {
					continue
				}
				matched[pattern]++
				full := expandClean(home, pattern)
				if !insideGrant(full, cleaned) {
					t.Fatalf("case %d (seed %d, home %s): grant %q matches %q, which cleans to %q outside %q",
						i, seed, home, pattern, target, cleaned, full)
				}
				if slices.Contains(strings.Split(cleaned, "/"), "..") {
					t.Fatalf("case %d (seed %d): matched target %q still has .. after cleaning", i, seed, target)
				}
			}
			// Completeness: a plain entry of the directory is covered.
			if rest, ok := strings.CutPrefix(cleaned, "/base/dir/"); ok && rest != "" && !strings.ContainsAny(rest, `/*?[{\`) {
				if !n.MatchGrant(policy.KindPathGlob, "/base/dir/*", target) {
					t.Fatalf("case %d (seed %d): /base/dir/* does not cover %q (cleaned %q)", i, seed, target, cleaned)
				}
			}
		}
	}
	t.Logf("matches per pattern: %v", matched)
	if matched["/base/dir/*"] == 0 || matched["/base/**"] == 0 {
		t.Error("the generator never produced a covered path")
	}
}

// TestProperty_GrantTargetNeverWidens: what Allow always writes covers the
// target and, for paths, at most the entries of one directory; for hosts,
// never a bare TLD wildcard.
func TestProperty_GrantTargetNeverWidens(t *testing.T) {
	seed := propertySeed(t)
	g := newGen(seed)
	n := testNorm
	cases := propertyCases(30_000, 1_000)
	taken := 0
	for i := range cases {
		target := g.target(policy.KindPathGlob)
		suggestion := g.pick(pathPatterns)
		if g.chance(0.5) {
			suggestion = path.Dir(expandClean(n.Home, target)) + "/" + g.pick([]string{"*", "*.pdf", "x*", "**", "?.pdf", "[xy].pdf"})
		}
		if g.chance(0.2) {
			suggestion = g.path()
		}
		p, ok := n.GrantTarget(policy.KindPathGlob, target, suggestion)
		if !n.MatchGrant(policy.KindPathGlob, p, target) && target != "" {
			t.Fatalf("case %d (seed %d): GrantTarget(%q, %q) = %q does not cover the target", i, seed, target, suggestion, p)
		}
		if !ok {
			want := expandClean(n.Home, target)
			if strings.ContainsAny(want, "*?[{") { // a glob search is granted as itself, escaped
				want = escapeGlob(want)
			}
			if p != want {
				t.Fatalf("case %d (seed %d): refused suggestion %q but wrote %q, not the cleaned target", i, seed, suggestion, p)
			}
			continue
		}
		taken++
		dir := path.Dir(p)
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(dir, "*?[{") || strings.Contains(p, "**") {
			t.Fatalf("case %d (seed %d): GrantTarget(%q, %q) = %q is wider than one directory", i, seed, target, suggestion, p)
		}
		// Any path the written grant covers lies directly in that directory.
		for range 20 {
			probe := g.path()
			if n.MatchGrant(policy.KindPathGlob, p, probe) && path.Dir(expandClean(n.Home, probe)) != dir {
				t.Fatalf("case %d (seed %d): grant %q covers %q outside %q", i, seed, p, probe, dir)
			}
		}
	}
	t.Logf("%d of %d suggestions taken", taken, cases)
	for _, tc := range []struct{ target, suggestion string }{
		{"api.example.com", "*.com"}, {"a.b.co.uk", "*.uk"}, {"api.example.com", "*"}, {"api.example.com", "*.*.com"},
	} {
		if p, ok := n.GrantTarget(policy.KindHost, tc.target, tc.suggestion); ok {
			t.Errorf("host GrantTarget(%q, %q) took the suggestion: %q", tc.target, tc.suggestion, p)
		}
	}
}

// escapeGlob escapes every glob character of p.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune("*?[]{}\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Fuzz targets. Their seed corpora run as part of go test.

var fuzzKinds = []policy.TargetKind{policy.KindPathGlob, policy.KindHost, policy.KindExact, policy.KindNone}

func addPairSeeds(f *testing.F) {
	for _, s := range [][2]string{
		{"/a/inv/*", "/a/inv/04.pdf"}, {"/a/inv/*", "/a/inv/../../.ssh/id_rsa"}, {"/a/**", "/a/b/c"},
		{"~/x/*", "~/x/../../y"}, {"*.example.com", "https://a.EXAMPLE.com:8443/x"}, {"*.example.com", "badexample.com"},
		{"git status*", "git status --short"}, {"*password*", "/home/x/password.txt"}, {`/a\/b/*`, "/a/b/c"},
		{"/a/{b,c/d}/*", "/a/c/d/e"}, {"/a/[!x]/*", "/a/y/z"}, {"[", "["}, {"{", "}"}, {"", ""}, {"*", "\x00"},
		{"/base/dir/*", "/base/dir/../../etc"}, {"/base/**", "/base/../base2/x"}, {"http://[::1]:80/", "http://[::1]:80/x"},
		{"*a*a*a*a*a*b", strings.Repeat("a", 64)}, {"/*", "//"}, {"~", "~"}, {"**", "/"},
	} {
		f.Add(s[0], s[1])
	}
}

// fuzzInside asserts the escape property for the fixed grant patterns.
func fuzzInside(t *testing.T, match func(pattern, target string) bool, target string) {
	cleaned := expandClean(testNorm.Home, target)
	for _, pattern := range []string{"/base/dir/*", "/base/**"} {
		if match(pattern, target) && !insideGrant(pattern, cleaned) {
			t.Fatalf("%q matches %q, which cleans to %q outside the pattern", pattern, target, cleaned)
		}
	}
}

func FuzzMatchGrant(f *testing.F) {
	addPairSeeds(f)
	n := testNorm
	f.Fuzz(func(t *testing.T, pattern, target string) {
		for _, k := range fuzzKinds {
			n.MatchGrant(k, pattern, target)
			n.GrantTarget(k, target, pattern)
			n.Anchor(k, pattern)
			n.Normalize(k, target)
		}
		fuzzInside(t, func(p, tg string) bool { return n.MatchGrant(policy.KindPathGlob, p, tg) }, target)
		cleaned := expandClean(n.Home, target)

		// The anchor index never hides a grant that covers the target: a
		// matching absolute path pattern's anchor is a directory of the target.
		if n.MatchGrant(policy.KindPathGlob, pattern, target) {
			if a := n.Anchor(policy.KindPathGlob, pattern); a != "" && cleaned != a && !strings.HasPrefix(cleaned, strings.TrimSuffix(a, "/")+"/") {
				t.Fatalf("grant %q covers %q (cleaned %q) but is indexed under %q", pattern, target, cleaned, a)
			}
		}
		if n.MatchGrant(policy.KindHost, pattern, target) {
			a, h := n.Anchor(policy.KindHost, pattern), n.Normalize(policy.KindHost, target)
			if rest, ok := strings.CutPrefix(a, "*."); ok && !strings.HasSuffix(h, "."+rest) || !ok && a != "" && a != h {
				t.Fatalf("host grant %q covers %q (host %q) but is indexed under %q", pattern, target, h, a)
			}
		}

		// What Allow always writes covers the target and at most one directory.
		if p, ok := n.GrantTarget(policy.KindPathGlob, target, pattern); ok {
			if !n.MatchGrant(policy.KindPathGlob, p, target) {
				t.Fatalf("GrantTarget(%q, %q) = %q does not cover the target", target, pattern, p)
			}
			if !strings.HasPrefix(p, "/") || strings.ContainsAny(path.Dir(p), "*?[{") || strings.Contains(p, "**") {
				t.Fatalf("GrantTarget(%q, %q) = %q is wider than one directory", target, pattern, p)
			}
			if path.Dir(cleaned) != path.Dir(p) && !strings.Contains(p, `\`) {
				t.Fatalf("GrantTarget(%q, %q) = %q is for another directory than %q", target, pattern, p, cleaned)
			}
		}
		if p, ok := n.GrantTarget(policy.KindHost, target, pattern); ok {
			if !n.MatchGrant(policy.KindHost, p, target) {
				t.Fatalf("host GrantTarget(%q, %q) = %q does not cover the target", target, pattern, p)
			}
			if rest, wild := strings.CutPrefix(p, "*."); wild && !strings.Contains(rest, ".") {
				t.Fatalf("host GrantTarget(%q, %q) = %q is a TLD wildcard", target, pattern, p)
			}
		}
	})
}

func FuzzMatchRule(f *testing.F) {
	addPairSeeds(f)
	n := testNorm
	f.Fuzz(func(t *testing.T, pattern, target string) {
		for _, k := range fuzzKinds {
			n.MatchRule(k, pattern, target)
			if !n.MatchRule(k, "*", target) {
				t.Fatalf("MatchRule(%s, \"*\", %q) = false", k, target)
			}
		}
		fuzzInside(t, func(p, tg string) bool { return n.MatchRule(policy.KindPathGlob, p, tg) }, target)
		// A path rule with a "/" is segment-aware: it never reaches outside
		// its literal directory, so an approve rule on ~/notes/** cannot be
		// stretched with "..".
		if strings.Contains(pattern, "/") && n.MatchRule(policy.KindPathGlob, pattern, target) && pattern != "**" {
			cleaned := expandClean(n.Home, target)
			if a := n.Anchor(policy.KindPathGlob, pattern); a != "" && cleaned != a && !strings.HasPrefix(cleaned, strings.TrimSuffix(a, "/")+"/") {
				t.Fatalf("rule %q matches %q (cleaned %q) outside %q", pattern, target, cleaned, a)
			}
		}
	})
}

// wildcardRef is the reference for exact-kind rule globs: '*' is any run of
// bytes, '?' exactly one, everything else literal. Valid for ASCII only.
func wildcardRef(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^(?s)`)
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzWildcard exercises the plain glob behind exact-kind rules
// (MatchRule with KindExact) against a regexp reference.
func FuzzWildcard(f *testing.F) {
	addPairSeeds(f)
	f.Add("a?c", "abc")
	f.Add("*?", "")
	f.Add("?*?", "ab")
	f.Fuzz(func(t *testing.T, p, s string) {
		got := testNorm.MatchRule(policy.KindExact, p, s)
		if !testNorm.MatchRule(policy.KindExact, "*", s) {
			t.Fatalf("\"*\" does not match %q", s)
		}
		if !testNorm.MatchRule(policy.KindExact, s, s) {
			t.Fatalf("%q as a pattern does not match itself", s)
		}
		if p != "" && isASCII(p) && isASCII(s) && len(p) < 200 {
			if want := wildcardRef(p).MatchString(s); got != want {
				t.Fatalf("wildcard(%q, %q) = %v, reference %v", p, s, got, want)
			}
		}
	})
}

func TestWildcard_NoBlowUp(t *testing.T) {
	cases := []struct {
		name, p, s string
		want       bool
	}{
		{"many stars, no match", strings.Repeat("*a", 100) + "b", strings.Repeat("a", policy.MaxTargetBytes), false},
		{"many stars, match", strings.Repeat("*a", 100), strings.Repeat("a", policy.MaxTargetBytes), true},
		{"question marks", strings.Repeat("?", 4096), strings.Repeat("x", 4096), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if got := testNorm.MatchRule(policy.KindExact, tc.p, tc.s); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %s: backtracking blow-up", el)
			}
		})
	}
}
