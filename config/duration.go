// A config duration: what the file writes ("90s", "10m", "2160h", "90d")
// read straight into the field.

package config

import (
	"time"

	durationpkg "github.com/metnos/gateway/internal/duration"
)

// Duration is a duration key of the file: time.ParseDuration's form or a
// whole number of days ("90d" = 2160h), read by ParseDuration. Convert it
// with time.Duration(d) to use it.
type Duration time.Duration

// UnmarshalText reads a duration with ParseDuration.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String is time.Duration's.
func (d Duration) String() string { return time.Duration(d).String() }

// ParseDuration reads a config duration: time.ParseDuration's form ("90s",
// "10m", "2160h", "1h30m") or a whole number of days ("90d" = 2160h). It is
// duration.Parse, which the command line and the API read theirs with too.
func ParseDuration(s string) (time.Duration, error) { return durationpkg.Parse(s) }

// Durations converts a list of them (approvals.allow_for).
func Durations(ds []Duration) []time.Duration {
	if ds == nil {
		return nil
	}
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d)
	}
	return out
}
