package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := map[string]time.Duration{
		"90s": 90 * time.Second, "10m": 10 * time.Minute, "2160h": 2160 * time.Hour, "1h30m": 90 * time.Minute,
		"90d": 90 * 24 * time.Hour, "0d": 0, "1d": 24 * time.Hour, "0": 0, "-5m": -5 * time.Minute,
	}
	for in, want := range good {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "90", "1.5d", "-1d", "+1d", "90 d", " 90d", "1d2h", "9999999999999d", "90days", "abc"} {
		if d, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, d)
		} else if want := `bad duration "` + in + `"`; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
			t.Errorf("Parse(%q): %v, want it to start %s", in, err, want)
		}
	}
}

// TestParseWait: ?wait= reads as every duration does; "3x" is refused,
// not read as 3 s, and so is a bare number or a negative wait.
func TestParseWait(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "2m": 2 * time.Minute, "1d": 24 * time.Hour, "0": 0} {
		if got, err := ParseWait(in); err != nil || got != want {
			t.Errorf("ParseWait(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"3x", "30", "1.5", "-5s", " 30s", "30s ", "", "3e1s0"} {
		if d, err := ParseWait(in); err == nil {
			t.Errorf("ParseWait(%q) = %v, want an error", in, d)
		}
	}
}
