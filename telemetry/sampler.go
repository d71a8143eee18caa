package telemetry

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// The samplers of OTEL_TRACES_SAMPLER this package implements, as the
// OpenTelemetry specification defines them; its argument,
// OTEL_TRACES_SAMPLER_ARG, is the ratio of the traceidratio ones.
const (
	SamplerAlwaysOn                = "always_on"
	SamplerAlwaysOff               = "always_off"
	SamplerRatio                   = "traceidratio"
	SamplerParentAlwaysOn          = "parentbased_always_on" // the default
	SamplerParentAlwaysOff         = "parentbased_always_off"
	SamplerParentRatio             = "parentbased_traceidratio"
	envSampler                     = "OTEL_TRACES_SAMPLER"
	envSamplerArg                  = "OTEL_TRACES_SAMPLER_ARG"
	samplersSupported              = SamplerAlwaysOn + ", " + SamplerAlwaysOff + ", " + SamplerRatio + ", " + SamplerParentAlwaysOn + ", " + SamplerParentAlwaysOff + ", " + SamplerParentRatio
	ratioScale             float64 = 1 << 63
)

// Sampler decides which traces are recorded.
type Sampler struct {
	// Name is one of the Sampler… constants.
	Name string
	// Ratio is the share of new traces a traceidratio sampler records.
	Ratio float64
}

// sampler reads OTEL_TRACES_SAMPLER and its argument: the default
// (parentbased_always_on) when unset; an error naming the variable for a
// sampler not implemented here or a ratio that is not a number in [0, 1].
func sampler(getenv func(string) string) (Sampler, error) {
	s := Sampler{Name: strings.ToLower(strings.TrimSpace(getenv(envSampler))), Ratio: 1}
	switch s.Name {
	case "":
		s.Name = SamplerParentAlwaysOn
	case SamplerAlwaysOn, SamplerAlwaysOff, SamplerParentAlwaysOn, SamplerParentAlwaysOff:
	case SamplerRatio, SamplerParentRatio:
		if arg := strings.TrimSpace(getenv(envSamplerArg)); arg != "" {
			r, err := strconv.ParseFloat(arg, 64)
			if err != nil || !(r >= 0 && r <= 1) {
				return Sampler{}, fmt.Errorf("%s: %q is not a ratio from 0 to 1", envSamplerArg, arg)
			}
			s.Ratio = r
		}
	default:
		return Sampler{}, fmt.Errorf("%s: unsupported sampler %q (want one of %s)", envSampler, s.Name, samplersSupported)
	}
	return s, nil
}

// decider is a Sampler ready to decide.
type decider struct {
	parentBased bool
	root        func(trace [16]byte) bool // the decision for a trace with no parent
}

func (s Sampler) decider() decider {
	d := decider{parentBased: strings.HasPrefix(s.Name, "parentbased_")}
	switch strings.TrimPrefix(s.Name, "parentbased_") {
	case SamplerAlwaysOff:
		d.root = func([16]byte) bool { return false }
	case SamplerRatio:
		// As OpenTelemetry's: the trace id's last 8 bytes, less their
		// lowest bit, under the ratio of 2^63.
		bound := uint64(s.Ratio * ratioScale)
		if s.Ratio >= 1 {
			bound = 1 << 63
		}
		d.root = func(t [16]byte) bool { return binary.BigEndian.Uint64(t[8:])>>1 < bound }
	default:
		d.root = nil // always on
	}
	return d
}

// sample decides for a new span of trace t, whose parent (valid when
// hasParent) was sampled or not.
func (d decider) sample(t [16]byte, hasParent, parentSampled bool) bool {
	if hasParent && d.parentBased {
		return parentSampled
	}
	return d.root == nil || d.root(t)
}
