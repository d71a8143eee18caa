package telemetry

import (
	"context"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// parseTraceparent reads a traceparent and tracestate as OpenTelemetry's
// W3C propagator does: the same accepted, the same refused, the same ids,
// flags and state, over well-formed headers, their edge cases and random
// mutations of them.
func TestParseTraceparent_AsThePropagator(t *testing.T) {
	inputs := []string{
		"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-04",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
		"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",
		"fe-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",
		"00-0af7651916cd43dd8448eb211c80319c0-b7ad6b7169203331-01",
		"00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
	states := []string{"", "vendor=abc,other=x", "bad state", "a=1,a=2", "k=v,,x=y"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "0123456789abcdefABF-_x"
	for range 3000 {
		b := []byte(inputs[1+r.IntN(len(inputs)-1)])
		for range 1 + r.IntN(3) {
			switch i := r.IntN(len(b) + 1); r.IntN(3) {
			case 0:
				if i < len(b) {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
			case 1:
				b = append(b[:i:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, b[i:]...)...)
			default:
				if i < len(b) {
					b = append(b[:i:i], b[i+1:]...)
				}
			}
		}
		inputs = append(inputs, string(b))
	}
	for i, in := range inputs {
		state := states[i%len(states)]
		c := propagation.MapCarrier{"traceparent": in, "tracestate": state}
		want := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
		got, ok := parseTraceparent(in, state)
		if ok != want.IsValid() {
			t.Fatalf("%q: ok = %v, the propagator says valid = %v", in, ok, want.IsValid())
		}
		if !ok {
			continue
		}
		if got.id.trace != want.TraceID() || got.id.span != want.SpanID() || got.flags != byte(want.TraceFlags()) ||
			got.id.state != want.TraceState().String() {
			t.Fatalf("%q %q: got %+v, the propagator's %v %v %v %q", in, state, got, want.TraceID(), want.SpanID(),
				want.TraceFlags(), want.TraceState().String())
		}
		if Valid(in) != ok {
			t.Fatalf("%q: Valid disagrees with the parse", in)
		}
	}
}
