package telemetry

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// The W3C trace flags this package reads and passes on.
const (
	flagSampled = 0x01
	flagRandom  = 0x02
)

// remoteParent is what a W3C traceparent (and tracestate) names: an
// agent's span.
type remoteParent struct {
	id    spanID
	flags byte
}

// parseTraceparent reads a W3C traceparent as OpenTelemetry's propagator
// does: version 00 exactly ("00-" 32 hex "-" 16 hex "-" 2 hex, lower
// case), a later version (up to fe) with possibly more fields after the
// flags, ids not all zero. The tracestate is kept when it is well formed,
// dropped (not the traceparent) when it is not. ok is false for anything
// else: a new trace begins.
func parseTraceparent(traceparent, tracestate string) (p remoteParent, ok bool) {
	h := traceparent
	var ver [1]byte
	if !hexPart(ver[:], &h, 2) || ver[0] == 0xff {
		return remoteParent{}, false
	}
	if !hexPart(p.id.trace[:], &h, 32) || !hexPart(p.id.span[:], &h, 16) {
		return remoteParent{}, false
	}
	var flags [1]byte
	if !hexPart(flags[:], &h, 2) {
		return remoteParent{}, false
	}
	if ver[0] == 0 && (h != "" || flags[0] > 3) {
		return remoteParent{}, false // version 00 has no more fields, no other flags
	}
	if p.id.trace == ([16]byte{}) || p.id.span == ([8]byte{}) {
		return remoteParent{}, false
	}
	p.flags = flags[0] & (flagSampled | flagRandom)
	if tracestate != "" {
		if ts, err := trace.ParseTraceState(tracestate); err == nil {
			p.id.state = ts.String()
		}
	}
	return p, true
}

// hexPart decodes the next '-'-separated part of *h, which must be n
// lower-case hex digits, into dst, and moves *h past it.
func hexPart(dst []byte, h *string, n int) bool {
	s := *h
	if len(s) < n || len(s) > n && s[n] != '-' {
		return false
	}
	part := s[:n]
	if len(s) > n {
		*h = s[n+1:]
	} else {
		*h = ""
	}
	for i := 0; i < n; i += 2 {
		hi, okh := unhex(part[i])
		lo, okl := unhex(part[i+1])
		if !okh || !okl {
			return false
		}
		dst[i/2] = hi<<4 | lo
	}
	return true
}

// unhex is the value of a lower-case hex digit.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Traceparent is the W3C traceparent of the span ctx carries, "" when
// it carries none: what a request keeps so that the spans of its later
// life (its cards, the decision, the callback) join its trace, on any
// replica.
func Traceparent(ctx context.Context) string {
	if !everOn.Load() {
		return ""
	}
	s := spanIn(ctx)
	if s == nil {
		return ""
	}
	tid, sid := s.id.trace, s.id.span
	// Version 00: "00-" trace id "-" span id "-" flags, in lower-case hex.
	var b [len("00-") + 2*len(tid) + 1 + 2*len(sid) + 1 + 2]byte
	copy(b[:], "00-")
	n := len("00-") + hex.Encode(b[len("00-"):], tid[:])
	b[n] = '-'
	n += 1 + hex.Encode(b[n+1:], sid[:])
	b[n] = '-'
	hex.Encode(b[n+1:], []byte{s.traceFlag & flagSampled})
	return string(b[:])
}

// Valid reports whether traceparent is a well-formed W3C traceparent
// with a valid trace and span id.
func Valid(traceparent string) bool {
	_, ok := parseTraceparent(traceparent, "")
	return ok
}
