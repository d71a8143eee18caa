package policy_test

import (
	"testing"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// TestDecide_Ask: a request marked Ask (a hook's tool input naming two
// different paths) needs a person at every level where the table would
// allow it, a rule would approve it or a grant would cover it; a denial
// still wins. It is asked every time (AskAlways), like a persistence point.
func TestDecide_Ask(t *testing.T) {
	g := &fakeFinder{norm: testNorm}
	g.add(roberto, "fs:read", "/**")
	g.add(roberto, "fs:write", "/**")
	cases := []struct {
		name  string
		cap   string
		rules []policy.Rule
		level policy.Level
		want  policy.Outcome
	}{
		{"table allows", "fs:read", nil, policy.Full, AR},
		{"approve rule", "fs:write", indexed(rule("fs:write", "*", policy.ActionApprove)), policy.Supervised, AR},
		{"block rule", "fs:read", indexed(rule("fs:read", "*", policy.ActionBlock)), policy.Full, D},
		{"table denies", "code:exec", nil, policy.ReadOnly, D},
		{"grant", "fs:write", nil, policy.Supervised, AR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Rules: tc.rules, Grants: g, Norm: testNorm}
			in := input(tc.level, tc.cap, "/home/r/proj/a.txt")
			in.Ask = "two paths"
			dec := decide(t, d, in)
			if dec.Outcome != tc.want {
				t.Fatalf("got %s (%s), want %s", dec.Outcome, dec.Reason, tc.want)
			}
			if tc.want == AR && (dec.Reason != "two paths" || !dec.AskAlways) {
				t.Errorf("reason %q, ask always %v: want the ask's, every time", dec.Reason, dec.AskAlways)
			}
		})
	}
}

// askDecider decides with the real vaglio (persistence points, trees that
// hold forbidden paths) and a grant for roberto on everything under /.
func askDecider(t *testing.T, rules ...policy.Rule) (*policy.Decider, *fakeFinder) {
	t.Helper()
	g := &fakeFinder{norm: testNorm}
	g.add(roberto, "fs:write", "/**")
	g.add(roberto, "fs:read", "/**")
	v := vaglio.New(vaglio.Options{Home: "/home/r"})
	t.Cleanup(func() { v.Close() })
	return &policy.Decider{Rules: indexed(rules...), Grants: g, Vaglio: v, Norm: testNorm}, g
}

// TestDecide_PersistencePointsAskEveryTime: fs:write on a shell rc file,
// authorized_keys, cron, a systemd unit, .git/hooks asks at every level
// where the table would allow, and neither an approve rule nor a grant
// lifts it (it is code execution, like code:exec).
func TestDecide_PersistencePointsAskEveryTime(t *testing.T) {
	d, _ := askDecider(t, rule("fs:write", "/home/r/**", policy.ActionApprove))
	for _, target := range []string{"~/.bashrc", "/home/r/.zshrc", "/home/r/.profile", "/etc/cron.d/x",
		"/etc/systemd/system/x.service", "/home/r/src/app/.git/hooks/pre-commit", "/home/r/src/app/.git/config",
		"/etc/profile.d/x.sh", "/etc/ld.so.preload"} {
		for _, l := range []policy.Level{policy.Supervised, policy.Full} {
			dec := decide(t, d, input(l, "fs:write", target))
			if dec.Outcome != policy.ApprovalRequired || !dec.AskAlways {
				t.Errorf("fs:write %q at %s: %s (%s), ask always %v; want approval_required every time",
					target, l, dec.Outcome, dec.Reason, dec.AskAlways)
			}
		}
		if dec := decide(t, d, input(policy.ReadOnly, "fs:write", target)); dec.Outcome != policy.Denied {
			t.Errorf("fs:write %q at ReadOnly: %s", target, dec.Outcome)
		}
	}
	if dec := decide(t, d, input(policy.Full, "fs:write", "/home/r/src/app/main.go")); dec.Outcome != policy.Allowed {
		t.Errorf("an ordinary file at Full: %s (%s)", dec.Outcome, dec.Reason)
	}
}

// TestDecide_TreeWithForbiddenPathAsks: a search or listing of a tree that
// holds a forbidden path is never allowed by the table alone; a glob that
// reaches one is denied by the guard.
func TestDecide_TreeWithForbiddenPathAsks(t *testing.T) {
	d := &policy.Decider{Vaglio: vaglio.New(vaglio.Options{Home: "/home/r"}), Norm: testNorm}
	for _, target := range []string{"/etc", "/", "~", "/home/r", "/home", "/home/r/**/id_*", "/dev"} {
		if dec := decide(t, d, input(policy.Full, "fs:read", target)); dec.Outcome != policy.ApprovalRequired {
			t.Errorf("fs:read %q at Full: %s (%s), want approval_required", target, dec.Outcome, dec.Reason)
		}
	}
	for _, target := range []string{"/home/r/.ss*/id_*", "/etc/sha*", "~/.ssh/*", "/etc/gshadow"} {
		if dec := decide(t, d, input(policy.Full, "fs:read", target)); dec.Outcome != policy.Denied || dec.BlockedBy != policy.BlockedByGuard {
			t.Errorf("fs:read %q at Full: %s (%s), want denied by the guard", target, dec.Outcome, dec.Reason)
		}
	}
	if dec := decide(t, d, input(policy.Full, "fs:read", "/home/r/src/app")); dec.Outcome != policy.Allowed {
		t.Errorf("a project directory at Full: %s (%s)", dec.Outcome, dec.Reason)
	}
}

// TestDecide_Workspace: with a workspace, fs:* outside it asks at every
// level where the table would allow; inside, nothing changes; a grant
// may still allow what is outside.
func TestDecide_Workspace(t *testing.T) {
	d := &policy.Decider{Vaglio: vaglio.New(vaglio.Options{Home: "/home/r"}), Norm: testNorm}
	ws := func(l policy.Level, capability, target string) policy.Input {
		in := input(l, capability, target)
		in.Profile.Workspace = []string{"~/src/app", "/srv/data/"}
		return in
	}
	for _, c := range []string{"fs:read", "fs:write"} {
		for _, target := range []string{"/home/r/src/app/main.go", "~/src/app/x/y", "/srv/data", "/srv/data/a.csv", "/home/r/src/app/*.go"} {
			if dec := decide(t, d, ws(policy.Full, c, target)); dec.Outcome != policy.Allowed {
				t.Errorf("%s %q inside the workspace: %s (%s)", c, target, dec.Outcome, dec.Reason)
			}
		}
		for _, target := range []string{"/home/r/src/other/x", "/home/r/src/app2/x", "/home/r/src/app/../other/x",
			"/tmp/x", "src/app/x", "/home/r/src/*/x", "/srv/dat*/x"} {
			dec := decide(t, d, ws(policy.Full, c, target))
			if dec.Outcome != policy.ApprovalRequired {
				t.Errorf("%s %q outside the workspace at Full: %s (%s)", c, target, dec.Outcome, dec.Reason)
			}
		}
	}
	g := &fakeFinder{norm: testNorm}
	g.add(roberto, "fs:read", "/tmp/*")
	dg := &policy.Decider{Grants: g, Vaglio: vaglio.New(vaglio.Options{Home: "/home/r"}), Norm: testNorm}
	if dec := decide(t, dg, ws(policy.Full, "fs:read", "/tmp/x")); dec.Outcome != policy.Allowed || dec.GrantID == 0 {
		t.Errorf("a grant outside the workspace: %s (%s)", dec.Outcome, dec.Reason)
	}
	if dec := decide(t, d, input(policy.Full, "fs:read", "/tmp/x")); dec.Outcome != policy.Allowed {
		t.Errorf("no workspace: %s", dec.Outcome)
	}
	// The agent's home, when known, is what "~" in its workspace means.
	agent := func(target string) policy.Input {
		in := ws(policy.Full, "fs:read", target)
		in.Profile.Home = "/home/agent"
		return in
	}
	if dec := decide(t, d, agent("/home/agent/src/app/main.go")); dec.Outcome != policy.Allowed {
		t.Errorf("inside the agent's ~/src/app: %s (%s)", dec.Outcome, dec.Reason)
	}
	if dec := decide(t, d, agent("/home/r/src/app/main.go")); dec.Outcome != policy.ApprovalRequired {
		t.Errorf("the gateway's ~/src/app is not the agent's: %s (%s)", dec.Outcome, dec.Reason)
	}
}

// TestDecide_AskRestrict: in restrict mode every ask, Input.Ask, a
// persistence point, a tree holding a forbidden path, a path outside the
// workspace, is denied at once: nobody is asked.
func TestDecide_AskRestrict(t *testing.T) {
	v := vaglio.New(vaglio.Options{Home: "/home/r"})
	t.Cleanup(func() { v.Close() })
	d := &policy.Decider{Vaglio: v, Norm: testNorm}
	restrict := func(capability, target string) policy.Input {
		in := input(policy.Full, capability, target)
		in.Profile.Mode = policy.ModeRestrict
		in.Profile.Workspace = []string{"~/src/app"}
		return in
	}
	ask := restrict("fs:read", "/home/r/src/app/a.txt")
	ask.Ask = "two paths"
	for name, in := range map[string]policy.Input{
		"ask":         ask,
		"persistence": restrict("fs:write", "~/.bashrc"),
		"tree":        restrict("fs:read", "/etc"),
		"workspace":   restrict("fs:read", "/srv/other/x"),
	} {
		if dec := decide(t, d, in); dec.Outcome != policy.Denied || dec.Reason != policy.RestrictReason {
			t.Errorf("%s: %s (%s), want denied by restrict mode", name, dec.Outcome, dec.Reason)
		}
	}
	if dec := decide(t, d, restrict("fs:read", "/home/r/src/app/a.txt")); dec.Outcome != policy.Allowed {
		t.Errorf("inside the workspace: %s (%s)", dec.Outcome, dec.Reason)
	}
}
