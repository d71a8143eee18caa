package policy

import "fmt"

// Mode is an agent's [[agents]] mode: what becomes of a request that a
// person would be asked about. It never changes what the table, a rule or
// a grant allows, nor what they deny.
type Mode string

// The modes. The zero Mode is ModeAsk.
const (
	// ModeAsk puts a card in front of a person (the default).
	ModeAsk Mode = "ask"
	// ModeRestrict denies at once what is not allowed by the table, an
	// approve rule or a grant: for headless agents (CI), where a card
	// nobody reads is a hung job.
	ModeRestrict Mode = "restrict"
)

// RestrictReason is the reason of a request restrict mode denied.
const RestrictReason = "restrict mode: not allowed by a rule or grant"

// ParseMode reads a mode name; "" is ModeAsk.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeAsk:
		return ModeAsk, nil
	case ModeRestrict:
		return ModeRestrict, nil
	}
	return "", fmt.Errorf("unknown mode %q (want %q or %q)", s, ModeAsk, ModeRestrict)
}

// Restricts reports whether m turns approval_required into denied.
func (m Mode) Restricts() bool { return m == ModeRestrict }

// Apply is what the mode makes of an outcome: restrict turns
// approval_required into denied; nothing else changes.
func (m Mode) Apply(o Outcome) Outcome {
	if o == ApprovalRequired && m.Restricts() {
		return Denied
	}
	return o
}
