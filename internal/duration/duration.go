// Package duration reads every duration the gateway takes, from the config
// file, the command line and the API alike: time.ParseDuration's form
// ("90s", "10m", "2160h", "1h30m") or a whole number of days ("90d").
package duration

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// day is the length "d" stands for: 24 hours, whatever the calendar does.
const day = 24 * time.Hour

// Parse reads s. A sign is allowed as time.ParseDuration allows it; callers
// that want no negative durations say so themselves.
func Parse(s string) (time.Duration, error) {
	if n, ok := days(s); ok {
		return time.Duration(n) * day, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return 0, fmt.Errorf("bad duration %q (want e.g. \"90s\", \"10m\", \"2160h\" or \"90d\")", s)
}

// ParseWait reads an API's ?wait= as every other duration is read
// (Parse: "30s", "2m", "90d"; "3x" or "30" is refused with Parse's
// words), and never negative. Every ?wait= the gateway takes is read here.
func ParseWait(s string) (time.Duration, error) {
	d, err := Parse(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}

// days reads "<digits>d", refusing a count whose hours overflow.
func days(s string) (int64, bool) {
	if len(s) < 2 || s[len(s)-1] != 'd' {
		return 0, false
	}
	for _, c := range s[:len(s)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n > math.MaxInt64/int64(day) {
		return 0, false
	}
	return n, true
}
