package main

import (
	"flag"
	"time"

	"github.com/metnos/gateway/internal/duration"
)

// durationValue is a duration flag read as the config file reads its
// durations (duration.Parse: "90s", "10m", "2160h", "90d").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// durationVar defines a duration flag on fs read by duration.Parse;
// flag.FlagSet.Duration would refuse "90d".
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

// durationFlag is durationVar returning the variable, as fs.Duration does.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, value, usage)
	return p
}
