// Package policy decides whether an agent may use a capability on a target:
// the closed capability registry, the autonomy table, config rules, the
// per-target grants store and the effective outcome that combines them.
package policy

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownCapability is returned wherever a capability name is not in the
// registry. The registry is closed: there is no way to add one at run time.
var ErrUnknownCapability = errors.New("unknown capability")

// Approval is how much human approval a capability needs by default.
type Approval string

// The default_approval values of the registry.
const (
	ApprovalNone      Approval = "none"       // never needs a person
	ApprovalPerTarget Approval = "per_target" // a person once per target; Allow always writes a grant
	ApprovalAlways    Approval = "always"     // a person every time; grants are never written
)

// TargetKind says how a capability's target is read and matched.
type TargetKind string

// The target kinds of the registry.
const (
	KindPathGlob TargetKind = "path_glob" // file paths, cleaned before matching; * within a segment, ** across
	KindHost     TargetKind = "host"      // host names, case-insensitive; URLs reduced to their host
	KindExact    TargetKind = "exact"     // literal strings; rules may use globs
	KindNone     TargetKind = "none"      // no target; grants are capability-wide
)

// Capability is one entry of the registry.
type Capability struct {
	Name            string     `json:"name"`
	Critical        bool       `json:"critical"`
	DefaultApproval Approval   `json:"default_approval"`
	TargetKind      TargetKind `json:"target_kind"`
	Description     string     `json:"description"`
}

// ReadOnly reports whether the capability only reads (its name ends in ":read").
func (c Capability) ReadOnly() bool { return strings.HasSuffix(c.Name, ":read") }

// registry is the closed list, in canonical order. It is never modified.
var registry = [...]Capability{
	{"fs:read", false, ApprovalPerTarget, KindPathGlob, "Read a file or list a directory on the host."},
	{"fs:write", true, ApprovalPerTarget, KindPathGlob, "Create, modify or delete a file on the host."},
	{"code:exec", true, ApprovalAlways, KindExact, "Run a shell command or program on the host."},
	{"network:http", false, ApprovalPerTarget, KindHost, "Make an HTTP request to a host."},
	{"llm:local", false, ApprovalNone, KindNone, "Call a language model running on this machine."},
	{"llm:online", false, ApprovalPerTarget, KindNone, "Send data to a hosted language model."},
	{"mail:read", false, ApprovalPerTarget, KindExact, "Read messages from a mailbox."},
	{"mail:send", true, ApprovalAlways, KindExact, "Send an email on the owner's behalf."},
	{"channel:in", false, ApprovalNone, KindExact, "Receive messages from a chat channel."},
	{"channel:out", false, ApprovalPerTarget, KindExact, "Post a message to a chat channel."},
	{"time:read", false, ApprovalNone, KindNone, "Read the current date and time."},
	{"parse:local", false, ApprovalNone, KindNone, "Parse or transform data locally, without I/O."},
	{"calendar:read", false, ApprovalPerTarget, KindExact, "Read calendar events."},
}

// Registry returns the capabilities in canonical order. The slice is a copy.
func Registry() []Capability {
	out := make([]Capability, len(registry))
	copy(out, registry[:])
	return out
}

// Lookup returns the named capability, or an error wrapping ErrUnknownCapability.
func Lookup(name string) (Capability, error) {
	for _, c := range registry {
		if c.Name == name {
			return c, nil
		}
	}
	return Capability{}, fmt.Errorf("%w %q", ErrUnknownCapability, name)
}

// Level is an autonomy level. Levels are ordered: ReadOnly < Supervised < Full,
// so the effective level of a request is the smaller of two.
type Level int

// The autonomy levels.
const (
	ReadOnly Level = iota + 1
	Supervised
	Full
)

// ErrUnknownLevel is returned for an autonomy level name that does not exist.
var ErrUnknownLevel = errors.New("unknown autonomy level")

// Levels lists the levels in ascending order.
func Levels() []Level { return []Level{ReadOnly, Supervised, Full} }

func (l Level) String() string {
	switch l {
	case ReadOnly:
		return "ReadOnly"
	case Supervised:
		return "Supervised"
	case Full:
		return "Full"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ParseLevel reads a level name. It accepts the canonical spelling and its
// lower-case form ("readonly", "read_only" too), and nothing else.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.ReplaceAll(s, "_", "")) {
	case "readonly":
		return ReadOnly, nil
	case "supervised":
		return Supervised, nil
	case "full":
		return Full, nil
	}
	return 0, fmt.Errorf("%w %q (want ReadOnly, Supervised or Full)", ErrUnknownLevel, s)
}

// MarshalText writes the canonical name.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a level name with ParseLevel.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// MinLevel returns the lower of two levels: the restrictive merge of a
// requested level and an agent's ceiling.
func MinLevel(a, b Level) Level {
	if a < b {
		return a
	}
	return b
}

// Outcome is what policy says about a request.
type Outcome string

// The three outcomes.
const (
	Allowed          Outcome = "allowed"
	Denied           Outcome = "denied"
	ApprovalRequired Outcome = "approval_required"
)

// TableOutcome is the autonomy table of SPEC §3, generated by its three rules.
func TableOutcome(l Level, c Capability) Outcome {
	switch l {
	case ReadOnly:
		switch {
		case c.DefaultApproval == ApprovalNone:
			return Allowed
		case c.DefaultApproval == ApprovalPerTarget && c.ReadOnly():
			return ApprovalRequired
		}
		return Denied
	case Supervised:
		if c.DefaultApproval == ApprovalNone {
			return Allowed
		}
		return ApprovalRequired
	case Full:
		if c.DefaultApproval == ApprovalAlways {
			return ApprovalRequired
		}
		return Allowed
	}
	return Denied // an invalid level never allows anything
}

// TableRow is one level's line of the table, as `gateway policy table` prints it.
type TableRow struct {
	Level    Level              `json:"level"`
	Outcomes map[string]Outcome `json:"outcomes"`
}

// Table returns the whole table, one row per level in ascending order.
func Table() []TableRow {
	rows := make([]TableRow, 0, 3)
	for _, l := range Levels() {
		row := TableRow{Level: l, Outcomes: make(map[string]Outcome, len(registry))}
		for _, c := range registry {
			row.Outcomes[c.Name] = TableOutcome(l, c)
		}
		rows = append(rows, row)
	}
	return rows
}
