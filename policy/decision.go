package policy

import "github.com/metnos/gateway/vaglio"

// Step is one layer's word in a decision's trace.
type Step struct {
	Layer   string  `json:"layer"`
	Outcome Outcome `json:"outcome,omitempty"`
	Detail  string  `json:"detail"`
}

// The blocked_by values.
const (
	BlockedByPolicy = "policy"
	BlockedByGuard  = "guard"
	BlockedByJudge  = "judge"
)

// Decision is the effective outcome of a request with the reason and the
// trace of every layer that spoke.
type Decision struct {
	Outcome    Outcome         `json:"outcome"`
	Reason     string          `json:"reason"`
	Autonomy   Level           `json:"autonomy"`
	BlockedBy  string          `json:"blocked_by,omitempty"`
	GrantID    int64           `json:"grant_id,omitempty"`
	Rule       *Rule           `json:"-"` // the rule that spoke (the first to match), nil when none did
	Vaglio     *vaglio.Verdict `json:"vaglio,omitempty"`
	Trace      []Step          `json:"trace"`
	Capability Capability      `json:"-"`
	Table      Outcome         `json:"-"` // the table's word, before rules and grants
	// AskAlways: only a person may allow this request, every time, and no
	// rule or grant did: Input.Ask, or fs:write on a persistence point
	// (whose card offers no Allow always, approvals.AllowAlwaysOffered).
	AskAlways bool `json:"-"`
}
