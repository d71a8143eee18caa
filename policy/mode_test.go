package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

func restricted(in policy.Input) policy.Input {
	in.Profile.Mode = policy.ModeRestrict
	return in
}

func TestDecide_RestrictMode(t *testing.T) {
	f := &fakeFinder{norm: testNorm}
	f.add(roberto, "fs:read", "/home/r/granted/*")
	rules := indexed(
		rule("code:exec", "cargo *", policy.ActionApprove),
		rule("code:exec", "git *", policy.ActionApprove),
		rule("fs:write", "/tmp/ask/*", policy.ActionRequireApproval),
		rule("*", "*password*", policy.ActionBlock),
	)
	cases := []struct {
		name   string
		in     policy.Input
		want   policy.Outcome
		reason string // the reason's exact text, for the restrict denials
		grant  bool
	}{
		{"what a person would be asked about is denied", restricted(input(policy.Supervised, "code:exec", "make test")),
			policy.Denied, policy.RestrictReason, false},
		{"an approve rule still allows", restricted(input(policy.Supervised, "code:exec", "cargo build")),
			policy.Allowed, "", false},
		{"a grant still allows", restricted(input(policy.Supervised, "fs:read", "/home/r/granted/a.txt")),
			policy.Allowed, "", true},
		{"the table still allows", restricted(input(policy.Full, "fs:write", "/home/r/a")), policy.Allowed, "", false},
		{"require_approval is denied", restricted(input(policy.Full, "fs:write", "/tmp/ask/x")),
			policy.Denied, policy.RestrictReason, false},
		{"a block stays a block", restricted(input(policy.Full, "code:exec", "git password")),
			policy.Denied, "blocked by rule #4", false},
		{"a denied cell stays denied", restricted(input(policy.ReadOnly, "code:exec", "git status")),
			policy.Denied, "code:exec is denied at autonomy ReadOnly", false},
		{"ask mode asks", input(policy.Supervised, "code:exec", "make test"), policy.ApprovalRequired, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &policy.Decider{Rules: rules, Grants: f, Norm: testNorm}
			dec := decide(t, d, tc.in)
			if dec.Outcome != tc.want || (dec.GrantID != 0) != tc.grant {
				t.Fatalf("got %q grant %d (%s), want %q", dec.Outcome, dec.GrantID, dec.Reason, tc.want)
			}
			if tc.reason != "" && dec.Reason != tc.reason {
				t.Errorf("reason %q, want %q", dec.Reason, tc.reason)
			}
			last := dec.Trace[len(dec.Trace)-1]
			if dec.Reason == policy.RestrictReason {
				if last.Layer != "mode" || last.Outcome != policy.Denied || dec.BlockedBy != policy.BlockedByPolicy {
					t.Errorf("last step %+v, blocked_by %q: want the mode's denial", last, dec.BlockedBy)
				}
			} else if last.Layer == "mode" {
				t.Errorf("a mode step on a decision restrict did not make: %+v", dec.Trace)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]policy.Mode{"": policy.ModeAsk, "ask": policy.ModeAsk, "restrict": policy.ModeRestrict} {
		if got, err := policy.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"dangerous", "Restrict", " ask"} {
		if _, err := policy.ParseMode(in); err == nil {
			t.Errorf("ParseMode(%q): no error", in)
		}
	}
}

func TestCapabilities_RestrictMode(t *testing.T) {
	p := profile(policy.Supervised)
	p.Mode = policy.ModeRestrict
	for _, c := range policy.Capabilities(nil, p, "telegram", "roberto", true) {
		cp, _ := policy.Lookup(c.Name)
		want := policy.TableOutcome(policy.Supervised, cp)
		if want == policy.ApprovalRequired {
			want = policy.Denied
		}
		if c.Outcome != want {
			t.Errorf("%s: %q, want %q", c.Name, c.Outcome, want)
		}
	}
	if got := policy.Capabilities(nil, p, "telegram", "roberto", false); len(got) != 4 {
		t.Errorf("restrict at Supervised lists %d capabilities, want the 4 allowed ones: %+v", len(got), got)
	}
}

// unscoring is a vaglio step whose judge did not score the request
// (on_failure = "ask"): what it would have allowed goes to a person.
type unscoring struct{}

func (unscoring) Check(context.Context, vaglio.Request) vaglio.Verdict {
	return vaglio.Verdict{Approved: true, Unscored: "llm judge unavailable: test"}
}

// TestDecide_RestrictMode_UnscoredIsDenied: a request the judge did not
// score would go to a person; in restrict mode nobody is asked, so it is
// denied at once, never left waiting for a card.
func TestDecide_RestrictMode_UnscoredIsDenied(t *testing.T) {
	d := &policy.Decider{Vaglio: unscoring{}, Norm: testNorm}
	ask := decide(t, d, input(policy.Full, "fs:write", "/home/r/a"))
	if ask.Outcome != policy.ApprovalRequired {
		t.Fatalf("ask mode: %q (%s), want approval_required", ask.Outcome, ask.Reason)
	}
	dec := decide(t, d, restricted(input(policy.Full, "fs:write", "/home/r/a")))
	if dec.Outcome != policy.Denied || !strings.HasPrefix(dec.Reason, policy.RestrictReason) ||
		dec.BlockedBy != policy.BlockedByPolicy {
		t.Fatalf("restrict mode: %q (%s) blocked_by %q, want the mode's denial", dec.Outcome, dec.Reason, dec.BlockedBy)
	}
	if last := dec.Trace[len(dec.Trace)-1]; last.Layer != "mode" || last.Outcome != policy.Denied {
		t.Errorf("last step %+v, want the mode's denial", last)
	}
}
