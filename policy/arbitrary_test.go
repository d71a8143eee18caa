package policy_test

import (
	"testing"

	"github.com/metnos/gateway/policy"
)

// TestCheckRule_ArbitraryByMeaning: an approve rule on a capability that
// always needs a person is refused when its pattern matches arbitrary
// targets, however it is spelled, and accepted when it names them.
func TestCheckRule_ArbitraryByMeaning(t *testing.T) {
	for _, tc := range []struct {
		capability, target string
		ok                 bool
	}{
		{"code:exec", "*", false},
		{"code:exec", "?*", false},
		{"code:exec", "*?", false},
		{"code:exec", "**", false},
		{"code:exec", "????????*", false},
		{"code:exec", "* *", false},
		{"code:exec", "*x*", false},
		{"code:exec", "s*", false},
		{"code:exec", "python3 *", false},
		{"code:exec", "git *", false},
		{"code:exec", "sudo *", false},
		{"code:*", "*?", false},
		{"*", "?*", false},
		{"mail:send", "*@*", false},
		{"mail:*", "*", false},
		{"code:exec", "git status*", true},
		{"code:exec", "make test", true},
		{"code:exec", "npm install", true},
		{"code:exec", "go test ./...", true},
		{"mail:send", "*@example.com", true},
		{"mail:send", "boss@example.com", true},
		{"fs:read", "*", true}, // fs:read is asked about per target, not always
	} {
		errs := policy.CheckRule(policy.Rule{Capability: tc.capability, Target: tc.target, Action: policy.ActionApprove}, nil)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("approve %s %q: errors %v, want ok=%v", tc.capability, tc.target, errs, tc.ok)
		}
	}
}
