package approvals_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/internal/jsonw/jsonwtest"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// TestRequestAppendJSON_AsEncodingJSON: Request.AppendJSON writes what
// encoding/json writes for the same request, byte for byte, over requests
// with every field randomly set, left empty or nil, and strings that need
// escaping. It also fails when Request gains a field AppendJSON does not
// know of (the field count below).
func TestRequestAppendJSON_AsEncodingJSON(t *testing.T) {
	if n := reflect.TypeFor[approvals.Request]().NumField(); n != 45 {
		t.Fatalf("Request has %d fields; teach Request.AppendJSON the new ones, then update this count", n)
	}
	r := rand.New(rand.NewPCG(11, 12))
	str := func() string {
		if r.IntN(3) == 0 {
			return ""
		}
		return jsonwtest.RandomString(r)
	}
	strs := func() []string {
		switch r.IntN(3) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		s := make([]string, 1+r.IntN(3))
		for i := range s {
			s[i] = str()
		}
		return s
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 7200)}
	tm := func() time.Time {
		return time.Unix(r.Int64N(4102444800), r.Int64N(1e9)).In(zones[r.IntN(2)])
	}
	tmp := func() *time.Time {
		if r.IntN(2) == 0 {
			return nil
		}
		v := tm()
		return &v
	}
	for range 3000 {
		req := approvals.Request{
			ID: str(), CallID: str(), Agent: str(), Status: approvals.Status(str()), Outcome: policy.Outcome(str()),
			Reason: str(), Capability: str(), Critical: r.IntN(2) == 0, Target: str(), GrantTarget: str(),
			Autonomy: policy.Level(r.IntN(5)), Channel: str(), SenderID: str(), Intent: str(), Executor: str(),
			Summary: str(), ArgKeys: strs(), DecidedBy: str(), DecidedAt: tmp(), CreatedAt: tm(), ExpiresAt: tm(),
			Note: str(), Notify: strs(), TokenID: str(), TokenName: str(), CallbackURL: str(),
			GrantExpiresAt: tmp(), Quorum: r.IntN(4), EscalatedAt: tmp(), StepUp: str(),
			Scopes: strs(), AllowFor: strs(), SessionID: str(),
			Approvers: strs(), EscalateAfter: time.Duration(r.IntN(1000)), EscalateTo: strs(), RemindEvery: time.Duration(r.IntN(9)), Rev: r.Int64N(9),
		}
		if r.IntN(2) == 0 {
			d := approvals.Decision(str())
			req.Decision = &d
		}
		if r.IntN(2) == 0 {
			s := str()
			req.BlockedBy = &s
		}
		if r.IntN(2) == 0 {
			id := r.Int64N(1 << 40)
			req.GrantID = &id
		}
		if r.IntN(3) > 0 {
			req.Vaglio = &vaglio.Verdict{Approved: r.IntN(2) == 0, Reason: str(), TS: tm(), JudgeKind: str(),
				Score: []float64{0, 0.7, r.Float64(), 1e-9}[r.IntN(4)], BlockedBy: str(), Factors: strs()}
		}
		if r.IntN(3) > 0 {
			req.Trace = make([]policy.Step, r.IntN(4))
			for i := range req.Trace {
				req.Trace[i] = policy.Step{Layer: str(), Outcome: policy.Outcome(str()), Detail: str()}
			}
		}
		if n := r.IntN(3); n > 0 {
			req.Approvals = make([]approvals.Approval, n-1)
			for i := range req.Approvals {
				req.Approvals[i] = approvals.Approval{By: str(), Approver: str(), Decision: approvals.Decision(str()),
					Channel: str(), At: tm(), Scope: str(), For: str(), Passkey: str()}
			}
		}
		if got, want := string(req.AppendJSON(nil)), jsonwtest.EncodingJSON(t, req); got != want {
			t.Fatalf("AppendJSON:\n%s\nencoding/json:\n%s", got, want)
		}
	}
}
