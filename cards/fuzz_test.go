package cards_test

import (
	"strings"
	"testing"

	slackcards "github.com/metnos/gateway/messenger/slack"

	"github.com/metnos/gateway/approvals"
	. "github.com/metnos/gateway/cards"
)

// FuzzCallbackData feeds arbitrary strings to Decode, as any Telegram
// client can send any callback_data: it never panics, and what it accepts
// is exactly what we encode (one spelling per button, so "v1:r:07" or
// "v1:r:+7" is not a second name for grant 7), within Telegram's 64 bytes.
func FuzzCallbackData(f *testing.F) {
	for _, s := range []string{
		EncodeDecision("rabcdefghijklmnop", approvals.AllowOnce),
		EncodeDecision("rabcdefghijklmnop", approvals.AllowAlways),
		EncodeDecision("rabcdefghijklmnop", approvals.Deny),
		EncodeDecision("r"+strings.Repeat("a", 39), approvals.Deny),
		EncodeRevoke(1), EncodeRevoke(9223372036854775807),
		"v1:x:rabc", "v1:o:", "v1:o:r", "v1:o:R2", "v1:o:rA", "v1:o:r1", "v1:r:0", "v1:r:-1",
		"v1:r:9223372036854775808", "v2:o:rabc", "v1:o:rabc:x", "v1::", "", ":", "v1:o:r\u00e9",
		"v1:o:" + strings.Repeat("r", 70),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		cb, err := Decode(data)
		if err != nil {
			if cb != (Callback{}) {
				t.Fatalf("Decode(%q) failed (%v) but returned %+v", data, err, cb)
			}
			return
		}
		if len(data) > MaxCallbackData {
			t.Fatalf("Decode accepted %d bytes, over the %d-byte limit", len(data), MaxCallbackData)
		}
		var again string
		switch {
		case cb.Revoke():
			if cb.GrantID <= 0 || cb.RequestID != "" || cb.Decision != "" {
				t.Fatalf("Decode(%q) = %+v: a revoke with other fields", data, cb)
			}
			again = EncodeRevoke(cb.GrantID)
		default:
			if _, err := approvals.ParseDecision(string(cb.Decision)); err != nil || cb.RequestID == "" {
				t.Fatalf("Decode(%q) = %+v: not a decision on a request", data, cb)
			}
			again = EncodeDecision(cb.RequestID, cb.Decision)
		}
		if again != data {
			t.Fatalf("Decode(%q) = %+v, which encodes as %q", data, cb, again)
		}

		// The same button on Slack decodes to the same callback.
		blockID, actionID := slackcards.SlackRevokeBlockID(cb.GrantID), slackcards.SlackActionRevoke
		value := strings.TrimPrefix(data, "v1:r:")
		if !cb.Revoke() {
			blockID, value = slackcards.SlackDecisionBlockID(cb.RequestID), cb.RequestID
			actionID = map[approvals.Decision]string{approvals.AllowOnce: slackcards.SlackActionAllowOnce,
				approvals.AllowAlways: slackcards.SlackActionAllowAlways, approvals.Deny: slackcards.SlackActionDeny}[cb.Decision]
		}
		if got, err := slackcards.ParseSlackAction(blockID, actionID, value); err != nil || got != cb {
			t.Fatalf("Slack reads the button of %q as %+v (%v), want %+v", data, got, err, cb)
		}
	})
}
