package cards_test

import (
	"strings"
	"testing"
	"time"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// /approvals rules shows a rule's target and scope as the cards show agent
// text (an admin agent may have added it over the API): no hidden
// character passes, each is shown as ⟦U+…⟧.
func TestSlackRuleLine_NoHiddenCharacters(t *testing.T) {
	l := locale.New(locale.English, time.UTC, time.Now)
	line := slackcards.SlackRulesText([]policy.RuleInfo{{ID: "api:1", Source: policy.SourceAPI, Owner: "user", Position: 1,
		Capability: "fs:write", Target: "/srv/a\u202eb/**", Action: policy.ActionApprove, SenderID: "own\u200ber",
		Agent: "metnos", Channel: "web", CreatedBy: "api:adm\u2066in"}}, l)
	if strings.ContainsAny(line, "\u202e\u200b\u2066") {
		t.Fatalf("hidden characters passed: %q", line)
	}
	for _, want := range []string{"/srv/a⟦U+202E⟧b/**", "own⟦U+200B⟧er", "adm⟦U+2066⟧in"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}
