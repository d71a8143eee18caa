package policy_test

import (
	"testing"

	"github.com/metnos/gateway/policy"
)

// TestDecide_Ask: a request marked Ask (a hook's tool input naming two
// different paths) needs a person at every level where the table would
// allow it or a rule would approve it; a denial still wins.
func TestDecide_Ask(t *testing.T) {
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Rules: tc.rules, Norm: testNorm}
			in := input(tc.level, tc.cap, "/home/r/proj/a.txt")
			in.Ask = "two paths"
			dec := decide(t, d, in)
			if dec.Outcome != tc.want {
				t.Fatalf("got %s (%s), want %s", dec.Outcome, dec.Reason, tc.want)
			}
			if tc.want == AR && dec.Reason != "two paths" {
				t.Errorf("reason %q, want the ask's", dec.Reason)
			}
		})
	}
}
