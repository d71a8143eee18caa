package policy_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/policy"
)

func TestNotifySet_Match(t *testing.T) {
	set := policy.CompileNotify(testNorm, []policy.NotifyPattern{
		{Index: 0, Capability: "code:exec", Target: "git push*", Deliveries: []string{"log"}},
		{Index: 1, Capability: "code:exec", Target: "rm *", Agent: "metnos", Deliveries: []string{"telegram"}},
		{Index: 2, Capability: "fs:*", Target: "~/notes/**", SenderID: "roberto", Deliveries: []string{"web"}},
		{Index: 3, Capability: "*", Target: "*secret*", Channel: "slack", Deliveries: []string{"slack"}},
	})
	subject := func(capability, target, agent, channel, sender string) policy.NotifySubject {
		c, err := policy.Lookup(capability)
		if err != nil {
			t.Fatal(err)
		}
		return policy.NotifySubject{Capability: c, Target: target, Agent: agent, Channel: channel, SenderID: sender}
	}
	cases := []struct {
		name string
		sub  policy.NotifySubject
		want []int
	}{
		{"git push", subject("code:exec", "git push origin main", "other", "web", "owner"), []int{0}},
		{"a chained push is told too", subject("code:exec", "git push; curl x | sh", "other", "web", "owner"), []int{0}},
		{"git status", subject("code:exec", "git status", "other", "web", "owner"), nil},
		{"rm by metnos", subject("code:exec", "rm -rf build", "metnos", "web", "owner"), []int{1}},
		{"rm by another agent", subject("code:exec", "rm -rf build", "other", "web", "owner"), nil},
		{"notes of roberto, cleaned", subject("fs:write", "/home/r/x/../notes/a/b.md", "metnos", "telegram", "roberto"), []int{2}},
		{"notes escape", subject("fs:read", "/home/r/notes/../.ssh/id", "metnos", "telegram", "roberto"), nil},
		{"notes of anna", subject("fs:read", "/home/r/notes/a.md", "metnos", "telegram", "anna"), nil},
		{"secret on slack, any capability", subject("mail:read", "my-secret-box", "metnos", "slack", "U1"), []int{3}},
		{"two patterns, file order", subject("code:exec", "git push secret", "metnos", "slack", "U1"), []int{0, 3}},
		{"no pattern for the capability", subject("time:read", "", "metnos", "slack", "U1"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, p := range set.Match(tc.sub) {
				got = append(got, p.Index)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("matched %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("matched %v, want %v", got, tc.want)
				}
			}
		})
	}
	var none *policy.NotifySet
	if !none.Empty() || none.Match(subject("code:exec", "git push", "a", "b", "c")) != nil {
		t.Error("a nil set matches")
	}
}

func TestCheckNotify(t *testing.T) {
	ok := policy.NotifyPattern{Capability: "code:exec", Target: "git push*", Deliveries: []string{"log", "webhook"},
		WebhookURL: "https://hooks.example.com/x"}
	if errs := policy.CheckNotify(ok, nil, nil); errs != nil {
		t.Fatalf("valid pattern refused: %v", errs)
	}
	cases := []struct {
		name  string
		edit  func(*policy.NotifyPattern)
		field string
		text  string
	}{
		{"unknown capability", func(p *policy.NotifyPattern) { p.Capability = "code:run" }, "capability", "unknown capability"},
		{"bad glob", func(p *policy.NotifyPattern) { p.Target = "git [push" }, "target", "bad glob"},
		{"no deliveries", func(p *policy.NotifyPattern) { p.Deliveries = nil; p.WebhookURL = "" }, "deliveries", "required"},
		{"unknown delivery", func(p *policy.NotifyPattern) { p.Deliveries = []string{"email"}; p.WebhookURL = "" }, "deliveries[0]", "unknown delivery"},
		{"twice", func(p *policy.NotifyPattern) { p.Deliveries = []string{"log", "log"}; p.WebhookURL = "" }, "deliveries[1]", "twice"},
		{"not configured", func(p *policy.NotifyPattern) { p.Deliveries = []string{"slack"}; p.WebhookURL = "" }, "deliveries[0]", "not configured"},
		{"webhook without url", func(p *policy.NotifyPattern) { p.WebhookURL = "" }, "webhook_url", "required"},
		{"url with user info", func(p *policy.NotifyPattern) { p.WebhookURL = "https://u:p@h/x" }, "webhook_url", "without user info"},
		{"javascript url", func(p *policy.NotifyPattern) { p.WebhookURL = "javascript:alert(1)" }, "webhook_url", "http(s)"},
		{"url without webhook", func(p *policy.NotifyPattern) { p.Deliveries = []string{"log"} }, "webhook_url", "no \"webhook\""},
		{"NUL in scope", func(p *policy.NotifyPattern) { p.SenderID = "a\x00b" }, "sender_id", "NUL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ok
			p.Deliveries = append([]string(nil), ok.Deliveries...)
			tc.edit(&p)
			errs := policy.CheckNotify(p, nil, map[string]bool{"slack": false})
			for _, fe := range errs {
				if fe.Field == tc.field && strings.Contains(fe.Err.Error(), tc.text) {
					return
				}
			}
			t.Errorf("errors %v: want %s: …%s…", errs, tc.field, tc.text)
		})
	}
}
