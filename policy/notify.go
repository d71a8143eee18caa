package policy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The deliveries of a notify pattern the gateway makes itself: where
// "allowed, but tell me" goes. Every other delivery is a messenger's
// name: a plain message in its chat.
const (
	DeliverLog     = "log"     // a log line
	DeliverWeb     = "web"     // an SSE event on the admin event stream
	DeliverWebhook = "webhook" // a signed POST to WebhookURL
)

// Deliveries lists the deliveries the gateway makes itself.
func Deliveries() []string {
	return []string{DeliverLog, DeliverWeb, DeliverWebhook}
}

// NotifyPattern is one [[policy.notify]] entry: a request allowed without
// a person (by the table, a rule or a grant) that it matches is told to
// its deliveries after the decision. It matches as a rule does
// (capability pattern, target glob, optional scope) and decides nothing.
type NotifyPattern struct {
	Index      int      `toml:"-"` // its place in the file, from 0
	Capability string   `toml:"capability"`
	Target     string   `toml:"target"`
	Agent      string   `toml:"agent"`
	SenderID   string   `toml:"sender_id"`
	Channel    string   `toml:"channel"`
	Deliveries []string `toml:"deliveries"`
	WebhookURL string   `toml:"webhook_url"` // with the "webhook" delivery
}

// Label names the pattern in logs and the audit: "notify#2" for the
// file's second.
func (p NotifyPattern) Label() string { return fmt.Sprintf("notify#%d", p.Index+1) }

// CheckNotify validates one notify pattern, each problem naming its field
// as CheckRule does. messengers maps the name of every messenger the
// gateway knows to whether it is configured: a configured one is a
// delivery too.
func CheckNotify(p NotifyPattern, knownAgent func(string) bool, messengers map[string]bool) []*FieldError {
	out, _ := checkSubject(p.Capability, p.Target)
	add := func(field, format string, args ...any) {
		out = append(out, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	known := Deliveries()
	for name := range messengers {
		known = append(known, name)
	}
	slices.Sort(known)
	if len(p.Deliveries) == 0 {
		add("deliveries", "required: one or more of %s", strings.Join(known, ", "))
	}
	for i, d := range p.Deliveries {
		field := fmt.Sprintf("deliveries[%d]", i)
		configured, messenger := messengers[d]
		switch {
		case !slices.Contains(known, d):
			add(field, "unknown delivery %q (want one of %s)", d, strings.Join(known, ", "))
		case slices.Index(p.Deliveries, d) < i:
			add(field, "%q is listed twice", d)
		case messenger && !configured:
			add(field, "%s is not configured ([%s] has no token)", d, d)
		}
	}
	hook := slices.Contains(p.Deliveries, DeliverWebhook)
	switch {
	case hook && p.WebhookURL == "":
		add("webhook_url", "required with the webhook delivery")
	case !hook && p.WebhookURL != "":
		add("webhook_url", "set, but deliveries has no \"webhook\"")
	case hook:
		if u, err := url.Parse(p.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || u.Fragment != "" {
			add("webhook_url", "want an http(s) URL without user info, got %q", p.WebhookURL)
		}
	}
	return append(out, checkScope(p.Agent, p.SenderID, p.Channel, knownAgent)...)
}

// NotifySet is the notify patterns compiled for the decision's hot path:
// each capability's patterns are found by one map lookup, so a request
// whose capability no pattern names costs nothing more, and the
// capability patterns ("*", "fs:*") are resolved once, at start.
type NotifySet struct {
	norm  Normalizer
	byCap map[string][]NotifyPattern
}

// CompileNotify builds the set; patterns must have passed CheckNotify.
func CompileNotify(n Normalizer, pats []NotifyPattern) *NotifySet {
	s := &NotifySet{norm: n, byCap: map[string][]NotifyPattern{}}
	for _, p := range pats {
		caps, err := CapabilityPattern(p.Capability)
		if err != nil {
			continue // refused by CheckNotify at load
		}
		for _, c := range caps {
			s.byCap[c.Name] = append(s.byCap[c.Name], p)
		}
	}
	return s
}

// Empty reports whether no pattern can match anything.
func (s *NotifySet) Empty() bool { return s == nil || len(s.byCap) == 0 }

// NotifySubject is an allowed request as notify patterns see it.
type NotifySubject = RuleSubject

// Match returns the patterns that match an allowed request, in file
// order (nil when none). Targets match as rule targets do, without the
// approve rules' refusal of chained shell commands: telling more is safe.
func (s *NotifySet) Match(sub NotifySubject) []NotifyPattern {
	if s == nil {
		return nil
	}
	cands := s.byCap[sub.Capability.Name]
	var out []NotifyPattern
	for _, p := range cands {
		if p.Agent != "" && p.Agent != sub.Agent || p.Channel != "" && p.Channel != sub.Channel ||
			p.SenderID != "" && p.SenderID != sub.SenderID {
			continue
		}
		if s.norm.MatchRule(sub.Capability.TargetKind, p.Target, sub.Target) {
			out = append(out, p)
		}
	}
	return out
}
