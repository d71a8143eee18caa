package policy_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
)

func lvl(l policy.Level) *policy.Level { return &l }
func num(n int) *int                   { return &n }

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestNarrow_RestrictiveOnly(t *testing.T) {
	parentExp := t0.Add(10 * time.Hour)
	parent := policy.TokenProfile{Autonomy: policy.Supervised, AllowCapabilities: []string{"fs:read", "fs:write", "code:exec"},
		DenyCapabilities: []string{"code:exec"}, Targets: map[string][]string{"fs:write": {"/srv/**", "/tmp/x"}},
		MaxRequests: num(50)}
	child, exp, narrowed, err := testNorm.Narrow(parent, &parentExp, policy.TokenRequest{
		TTL: 48 * time.Hour, Autonomy: lvl(policy.Full), AllowCapabilities: []string{"fs:write", "mail:send", "fs:read"},
		DenyCapabilities: []string{"fs:read"},
		Targets: map[string][]string{"fs:write": {"/srv/app/config.yml", "/srv/**", "/etc/**", "/srv/*", "/tmp/x"},
			"network:http": {"*.example.com"}},
		MaxRequests: num(500), Name: "refactor-bot",
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if child.Autonomy != policy.Supervised || !exp.Equal(parentExp) || *child.MaxRequests != 50 {
		t.Errorf("autonomy %s, expires %s, max %d", child.Autonomy, exp, *child.MaxRequests)
	}
	if !slices.Equal(child.AllowCapabilities, []string{"fs:write", "fs:read"}) {
		t.Errorf("allow %v", child.AllowCapabilities)
	}
	if !slices.Equal(child.DenyCapabilities, []string{"code:exec", "fs:read"}) {
		t.Errorf("deny %v", child.DenyCapabilities)
	}
	if got := child.Targets["fs:write"]; !slices.Equal(got, []string{"/srv/app/config.yml", "/srv/**", "/tmp/x"}) {
		t.Errorf("fs:write targets %v", got)
	}
	if got := child.Targets["network:http"]; !slices.Equal(got, []string{"*.example.com"}) {
		t.Errorf("network:http targets %v (the parent had no limit there)", got)
	}
	var fields []string
	for _, n := range narrowed {
		fields = append(fields, fmt.Sprintf("%s=%v", n.Field, n.Asked))
	}
	want := []string{"autonomy=Full", "allow_capabilities=mail:send", "targets.fs:write=/etc/**", "targets.fs:write=/srv/*",
		"max_requests=500", "ttl=48h0m0s"}
	if !slices.Equal(fields, want) {
		t.Errorf("narrowed\n got %v\nwant %v", fields, want)
	}
	// What a refused pattern reports as given is what the child holds for
	// that capability, never the parent's (wider) patterns.
	for _, n := range narrowed {
		if strings.HasPrefix(n.Field, "targets.") {
			if g, ok := n.Given.([]string); !ok || !slices.Equal(g, child.Targets[strings.TrimPrefix(n.Field, "targets.")]) {
				t.Errorf("%s asked %v: given %v, the child holds %v", n.Field, n.Asked, n.Given, child.Targets["fs:write"])
			}
		}
	}
	// A pattern wider than the parent's, alone: the child holds nothing for
	// the capability, and says so.
	_, _, narrowed, _ = testNorm.Narrow(parent, &parentExp, policy.TokenRequest{TTL: time.Hour,
		Targets: map[string][]string{"fs:write": {"/**"}}}, t0)
	if len(narrowed) != 1 || fmt.Sprint(narrowed[0].Given) != "[]" {
		t.Errorf("a refused /** reports %+v, want given []", narrowed)
	}

	// Nothing asked beyond the parent: nothing narrowed; absent fields inherit.
	child, exp, narrowed, err = testNorm.Narrow(parent, &parentExp, policy.TokenRequest{TTL: time.Hour}, t0)
	if err != nil || len(narrowed) != 0 || !exp.Equal(t0.Add(time.Hour)) || !slices.Equal(child.AllowCapabilities, parent.AllowCapabilities) ||
		*child.MaxRequests != 50 || child.Targets["fs:write"][0] != "/srv/**" {
		t.Errorf("plain child: %+v %s %v %v", child, exp, narrowed, err)
	}

	// An allow list that shares nothing with the parent's allows nothing,
	// never everything.
	child, _, _, _ = testNorm.Narrow(parent, &parentExp, policy.TokenRequest{TTL: time.Hour, AllowCapabilities: []string{"mail:send"}}, t0)
	if child.AllowCapabilities == nil || len(child.AllowCapabilities) != 0 {
		t.Fatalf("disjoint allow list gave %v", child.AllowCapabilities)
	}
	if p := child.Profile("metnos", "x"); p.Permits("fs:read") || p.Permits("mail:send") {
		t.Errorf("a child with an empty allow list permits something")
	}
	// The root's empty allow list means all.
	root := policy.RootProfile(policy.Full, nil, nil)
	if !root.Profile("metnos", "").Permits("mail:send") {
		t.Error("root with no allow list does not permit mail:send")
	}
}

func TestNarrow_BadInput(t *testing.T) {
	root := policy.RootProfile(policy.Full, nil, nil)
	for _, tc := range []struct {
		req   policy.TokenRequest
		field string
	}{
		{policy.TokenRequest{}, "ttl"},
		{policy.TokenRequest{TTL: -time.Hour}, "ttl"},
		{policy.TokenRequest{TTL: time.Hour, AllowCapabilities: []string{"fs:wirte"}}, "allow_capabilities"},
		{policy.TokenRequest{TTL: time.Hour, DenyCapabilities: []string{"nope"}}, "deny_capabilities"},
		{policy.TokenRequest{TTL: time.Hour, Targets: map[string][]string{"llm:local": {"x"}}}, "targets"},
		{policy.TokenRequest{TTL: time.Hour, Targets: map[string][]string{"fs:read": {"a\x00b"}}}, "targets"},
		{policy.TokenRequest{TTL: time.Hour, MaxRequests: num(0)}, "max_requests"},
		{policy.TokenRequest{TTL: time.Hour, Name: strings.Repeat("x", 65)}, "name"},
		{policy.TokenRequest{TTL: time.Hour, Autonomy: lvl(9)}, "autonomy"},
	} {
		_, _, _, err := testNorm.Narrow(root, nil, tc.req, t0)
		var fe *policy.FieldError
		if !errorsAs(err, &fe) || fe.Field != tc.field {
			t.Errorf("%+v: %v, want a FieldError on %s", tc.req, err, tc.field)
		}
	}
}

// The pools the property test draws from: capabilities, and targets and
// patterns that tempt a sloppy merge (traversal, case, URLs, shell chains,
// globs inside globs).
var (
	propCaps    = []string{"fs:read", "fs:write", "code:exec", "network:http", "llm:local", "mail:send", "calendar:read"}
	propTargets = map[string][]string{
		"fs:read":       {"/srv/a", "/srv/app/x.yml", "/srv/../etc/passwd", "/etc/passwd", "/tmp/x", "~/notes", "/srv/./a", "rel/a"},
		"fs:write":      {"/srv/a", "/srv/app/x.yml", "/srv/../etc/passwd", "/tmp/x", "/home/r/notes", "~/notes", "/srv/sub/deep/f"},
		"code:exec":     {"git status", "git status; rm -rf ~", "git log", "ls", "make test", "git *"},
		"network:http":  {"api.example.com", "API.example.com", "https://api.example.com/x", "evil.com", "a.b.example.com", "example.com"},
		"llm:local":     {""},
		"mail:send":     {"bob@example.com", "eve@example.com"},
		"calendar:read": {"work", "home"},
	}
	propPatterns = map[string][]string{
		"fs:read":       {"/srv/**", "/srv/*", "/srv/a", "/etc/passwd", "*", "**", "/tmp/x", "~/notes", "/home/r/notes", "/srv/../etc/passwd", "/srv/./a", "rel/a", "*a*"},
		"fs:write":      {"/srv/**", "/srv/app/*", "/srv/a", "/tmp/x", "~/notes", "/home/r/notes", "*", "/srv/sub/**", "/srv/../etc/passwd"},
		"code:exec":     {"git *", "git status", "git status; rm -rf ~", "ls", "*", "make *", "git log"},
		"network:http":  {"*.example.com", "api.example.com", "API.example.com", "*", "example.com", "evil.com", "https://api.example.com/x"},
		"mail:send":     {"bob@example.com", "*@example.com", "*"},
		"calendar:read": {"work", "*"},
	}
	propLevels = []policy.Level{policy.ReadOnly, policy.Supervised, policy.Full}
)

func subset(r *rand.Rand, pool []string, max int) []string {
	var out []string
	for range r.IntN(max + 1) {
		out = append(out, pool[r.IntN(len(pool))])
	}
	return out
}

func randomRequest(r *rand.Rand) policy.TokenRequest {
	req := policy.TokenRequest{TTL: time.Duration(1+r.IntN(100)) * time.Hour}
	if r.IntN(2) == 0 {
		req.Autonomy = lvl(propLevels[r.IntN(3)])
	}
	if r.IntN(2) == 0 {
		req.AllowCapabilities = subset(r, propCaps, 4)
	}
	if r.IntN(3) == 0 {
		req.DenyCapabilities = subset(r, propCaps, 2)
	}
	if r.IntN(2) == 0 {
		req.Targets = map[string][]string{}
		for range 1 + r.IntN(3) {
			c := propCaps[r.IntN(len(propCaps))]
			if pats := propPatterns[c]; pats != nil {
				req.Targets[c] = subset(r, pats, 3)
			}
		}
	}
	if r.IntN(3) == 0 {
		req.MaxRequests = num(1 + r.IntN(100))
	}
	return req
}

// allowedSet is every (capability, level, target) of the pools a profile
// lets through, with the outcome: what Decide says with no rules or grants.
func allowedSet(t *testing.T, p policy.Profile) map[string]policy.Outcome {
	d := &policy.Decider{Norm: testNorm}
	out := map[string]policy.Outcome{}
	for _, c := range propCaps {
		for _, l := range propLevels {
			for _, target := range propTargets[c] {
				dec, err := d.Decide(context.Background(), policy.Input{Profile: p, Capability: c, Target: target, Requested: l,
					Channel: "web", SenderID: "owner", DryRun: true})
				if err != nil {
					t.Fatalf("decide %s %s %q: %v", c, l, target, err)
				}
				if dec.Outcome != policy.Denied {
					out[fmt.Sprintf("%s|%s|%s", c, l, target)] = dec.Outcome
				}
			}
		}
	}
	return out
}

// TestProperty_ChildNeverWider: for random parents and requests, the set of
// (capability, level, target) a child token lets through is a subset of its
// parent's, and what it allows without a person its parent allows too, at
// every depth of a chain of children.
func TestProperty_ChildNeverWider(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 2026))
	chains := 300
	if testing.Short() {
		chains = 60
	}
	for i := range chains {
		// A random root: the agent's own profile.
		root := policy.RootProfile(propLevels[r.IntN(3)], subset(r, propCaps, 3), subset(r, propCaps, 1))
		parent, parentSet := root, allowedSet(t, root.Profile("a", ""))
		var parentExp *time.Time
		now := t0
		for depth := 1; depth <= 4; depth++ {
			req := randomRequest(r)
			child, exp, _, err := testNorm.Narrow(parent, parentExp, req, now)
			if err != nil {
				t.Fatalf("chain %d depth %d: %v", i, depth, err)
			}
			if parentExp != nil && exp.After(*parentExp) {
				t.Fatalf("chain %d depth %d: child expires %s after its parent %s", i, depth, exp, parentExp)
			}
			if parent.MaxRequests != nil && (child.MaxRequests == nil || *child.MaxRequests > *parent.MaxRequests) {
				t.Fatalf("chain %d depth %d: max_requests %v above the parent's %d", i, depth, child.MaxRequests, *parent.MaxRequests)
			}
			childSet := allowedSet(t, child.Profile("a", "c"))
			for k, o := range childSet {
				po, ok := parentSet[k]
				if !ok {
					t.Fatalf("chain %d depth %d: the child lets %s through (%s), its parent does not\nparent %+v\nrequest %+v\nchild %+v",
						i, depth, k, o, parent, req, child)
				}
				if o == policy.Allowed && po != policy.Allowed {
					t.Fatalf("chain %d depth %d: the child is allowed %s without a person, its parent needs %s\nparent %+v\nchild %+v",
						i, depth, k, po, parent, child)
				}
			}
			parent, parentSet, parentExp = child, childSet, &exp
			now = now.Add(time.Minute)
		}
	}
}

func errorsAs(err error, fe **policy.FieldError) bool { return errors.As(err, fe) }
