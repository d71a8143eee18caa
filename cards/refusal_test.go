package cards

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

func TestAlreadyDecided(t *testing.T) {
	at := time.Date(2026, 11, 20, 14, 3, 0, 0, time.UTC)
	d := func(d approvals.Decision) *approvals.Decision { return &d }
	cases := []struct {
		r    approvals.Request
		want string
	}{
		{approvals.Request{Status: approvals.StatusAllowed, Decision: d(approvals.AllowOnce), DecidedBy: "telegram:Roberto (42)", DecidedAt: &at},
			"Already decided: allowed once by Roberto at 14:03 UTC"},
		{approvals.Request{Status: approvals.StatusAllowed, Decision: d(approvals.AllowAlways), DecidedBy: "web:owner", DecidedAt: &at},
			"Already decided: allowed always by owner at 14:03 UTC"},
		{approvals.Request{Status: approvals.StatusDenied, Decision: d(approvals.Deny), DecidedBy: "api:boss", DecidedAt: &at},
			"Already decided: denied by boss at 14:03 UTC"},
		{approvals.Request{Status: approvals.StatusExpired, DecidedBy: "timeout", DecidedAt: &at},
			"Already decided: expired (nobody answered in time) at 14:03 UTC"},
		{approvals.Request{Status: approvals.StatusCancelled, DecidedBy: "agent:a1", DecidedAt: &at},
			"Already decided: withdrawn by the agent at 14:03 UTC"},
		{approvals.Request{Status: approvals.StatusDenied, Decision: d(approvals.Deny), DecidedBy: "slack:a\u202Eb", DecidedAt: &at},
			"Already decided: denied by a⟦U+202E⟧b at 14:03 UTC"},
	}
	for _, tc := range cases {
		if got := AlreadyDecided(tc.r, locale.New(locale.English, time.UTC, func() time.Time { return at })); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestRefusal: every refusal the service gives a person has words of its
// own in every language, and only a failure is unexpected.
func TestRefusal(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("decide request r1: %w", err) }
	pending := approvals.Request{ID: "r1", Status: approvals.StatusPending, Quorum: 2}
	cases := []struct {
		err  error
		key  string
		want bool
	}{
		{wrap(&approvals.AlreadyCountedError{Request: pending}), "refusal.already_counted", true},
		{wrap(&approvals.AlreadyDecidedError{Request: approvals.Request{Status: approvals.StatusExpired}}), "refusal.already_expired", true},
		{wrap(fmt.Errorf("%w: %w: telegram:9", approvals.ErrOutsider, approvals.ErrNotApprover)), "refusal.not_approver", true},
		{wrap(fmt.Errorf("%w: telegram:9", approvals.ErrNotApprover)), "refusal.not_route_approver", true},
		{wrap(fmt.Errorf("%w: code:exec", approvals.ErrAllowAlwaysRefused)), "refusal.allow_always_refused", true},
		{wrap(fmt.Errorf("grant: %w", policy.ErrGrantNotAllowed)), "refusal.allow_always_refused", true},
		{wrap(fmt.Errorf("%w: scope", approvals.ErrNotOffered)), "refusal.not_offered", true},
		{wrap(approvals.ErrNotFound), "refusal.request_gone", true},
		{wrap(fmt.Errorf("%w: duration: %s is not a duration", approvals.ErrInvalid, "x\u202E")), "refusal.invalid", true},
		{wrap(errors.New("database is locked")), "refusal.failed", false},
	}
	for _, lang := range locale.Langs() {
		l := locale.New(lang, time.UTC, nil)
		for _, tc := range cases {
			got, expected := Refusal(tc.err, l)
			if expected != tc.want {
				t.Errorf("%s %v: expected = %v", lang, tc.err, expected)
			}
			prefix, _, _ := strings.Cut(l.T(tc.key), "%")
			if l.T(tc.key) == tc.key || !strings.HasPrefix(got, prefix) {
				t.Errorf("%s %v: got %q, want the words of %s", lang, tc.err, got, tc.key)
			}
			if strings.ContainsRune(got, '\u202E') || strings.Contains(got, "database") {
				t.Errorf("%s %v: %q shows what it should not", lang, tc.err, got)
			}
		}
	}
	invalid, _ := Refusal(cases[8].err, locale.Locale{})
	if !strings.Contains(invalid, "That choice is not valid: duration: x⟦U+202E⟧ is not a duration. Nothing changed.") {
		t.Errorf("invalid: %q", invalid)
	}
}
