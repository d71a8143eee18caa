package policy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/metnos/gateway/policy"
)

// TestDecide_TraceWording: the trace's steps read as they always did
// (they were written with fmt; the common ones are now concatenated), also
// for agent names that %q must escape.
func TestDecide_TraceWording(t *testing.T) {
	d := &policy.Decider{Norm: testNorm}
	for _, agent := range []string{"perf", `quo"te`, "back\\slash", "new\nline", "é€𝄞", "\x00\xff"} {
		for _, requested := range []policy.Level{0, policy.ReadOnly, policy.Full} {
			p := policy.Profile{Agent: agent, Ceiling: policy.Full}
			dec, err := d.Decide(context.Background(), policy.Input{Profile: p, Capability: "llm:local",
				Requested: requested, Channel: "web", SenderID: "owner", DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			level := policy.Full
			req := "default"
			if requested != 0 {
				level = min(requested, policy.Full)
				req = requested.String()
			}
			want := []policy.Step{
				{Layer: "profile", Detail: fmt.Sprintf("agent %q: requested %s, ceiling %s, effective %s", agent, req, policy.Full, level)},
				{Layer: "table", Outcome: policy.Allowed, Detail: fmt.Sprintf("%s at %s", "llm:local", level)},
				{Layer: "rules", Detail: "no rule matched"},
				{Layer: "combine", Outcome: policy.Allowed, Detail: fmt.Sprintf("%s is allowed at autonomy %s", "llm:local", level)},
			}
			if fmt.Sprint(dec.Trace) != fmt.Sprint(want) {
				t.Errorf("agent %q, requested %v:\n got %q\nwant %q", agent, requested, dec.Trace, want)
			}
			if dec.Reason != want[3].Detail {
				t.Errorf("reason %q, want %q", dec.Reason, want[3].Detail)
			}
		}
	}
}
