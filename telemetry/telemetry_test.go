package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/telemetry/otlptest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      telemetry.Config
		env      map[string]string
		on       bool
		endpoint string
		protocol string
		err      string
	}{
		{name: "off by default", protocol: telemetry.ProtocolHTTP},
		{name: "the file's endpoint", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"}, on: true,
			endpoint: "http://127.0.0.1:4318", protocol: telemetry.ProtocolHTTP},
		{name: "the environment's endpoint wins", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"},
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.2:4318"}, on: true, protocol: telemetry.ProtocolHTTP},
		{name: "a traces endpoint turns it on", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.2:4318/v1/traces"},
			on: true, protocol: telemetry.ProtocolHTTP},
		{name: "grpc from the file", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"}, on: true,
			endpoint: "http://127.0.0.1:4317", protocol: telemetry.ProtocolGRPC},
		{name: "the environment's protocol wins", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"},
			env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true,
			endpoint: "http://127.0.0.1:4317", protocol: telemetry.ProtocolHTTP},
		{name: "sdk disabled", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"},
			env: map[string]string{"OTEL_SDK_DISABLED": "true"}, protocol: telemetry.ProtocolHTTP, endpoint: "http://127.0.0.1:4318"},
		{name: "exporter none", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"},
			env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, protocol: telemetry.ProtocolHTTP, endpoint: "http://127.0.0.1:4318"},
		{name: "an unsupported sampler is refused", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"},
			env: map[string]string{"OTEL_TRACES_SAMPLER": "xray"}, err: `OTEL_TRACES_SAMPLER: unsupported sampler "xray"`},
		{name: "the sampler is not read when off", env: map[string]string{"OTEL_TRACES_SAMPLER": "xray"}, protocol: telemetry.ProtocolHTTP},
		{name: "a bad queue size is refused", cfg: telemetry.Config{Endpoint: "http://127.0.0.1:4318"},
			env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, err: `OTEL_BSP_MAX_QUEUE_SIZE: "0" is not a positive integer`},
		{name: "http/json is refused", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
			err: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: unsupported protocol "http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := telemetry.Resolve(tc.cfg, env(tc.env))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.On != tc.on || r.Endpoint != tc.endpoint || r.Protocol != tc.protocol {
				t.Fatalf("got %+v, want on %v endpoint %q protocol %q", r, tc.on, tc.endpoint, tc.protocol)
			}
		})
	}
}

// testKey is a context key of the test's own: a context that carries
// values, as a request's does.
type testKey struct{}

// Off, there is no provider, and starting a span under a context that
// carries none allocates nothing.
func TestOff_CostsNothing(t *testing.T) {
	p, err := telemetry.New(context.Background(), telemetry.Config{}, env(nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || p != nil {
		t.Fatalf("New = %v, %v; want nil, nil", p, err)
	}
	ctx := context.WithValue(context.Background(), testKey{}, 1)
	allocs := testing.AllocsPerRun(100, func() {
		c, s := telemetry.Start(ctx, "x")
		s.String(telemetry.KeyAgent, "a")
		s.Set(telemetry.StringAttr(telemetry.KeyAgent, "a"), telemetry.StringAttr(telemetry.KeyStatus, "s"))
		s.End()
		c2, s2 := p.StartServer(c, "y", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
		s2.End()
		_ = telemetry.Traceparent(c2)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run with telemetry off, want 0", allocs)
	}
}

// A span started under an agent's traceparent is in the agent's trace, a
// child of its span; spans started under it with Start are its children;
// StartIn joins a trace by the traceparent kept.
func TestProvider_TraceTree(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	ctx := context.Background()
	p := rcv.Provider(t, nil)
	const agentTrace, agentSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	rctx, root := p.StartServer(ctx, "request", "00-"+agentTrace+"-"+agentSpan+"-01", "")
	_, child := telemetry.Start(rctx, "policy")
	child.String(telemetry.KeyCapability, "fs:read")
	child.String(telemetry.Key{}, "not one of the keys")
	child.End()
	kept := telemetry.Traceparent(rctx)
	root.End()
	if !telemetry.Valid(kept) {
		t.Fatalf("Traceparent = %q, not valid", kept)
	}
	_, later := p.StartIn(ctx, kept, "wait", time.Now().Add(-time.Second))
	later.End()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	byName := map[string]otlptest.Span{}
	for _, s := range rcv.Spans() {
		byName[s.Name] = s
	}
	r, pol, w := byName["request"], byName["policy"], byName["wait"]
	if r.TraceID != agentTrace || r.ParentID != agentSpan || r.Kind != "SPAN_KIND_SERVER" || r.Service != telemetry.ServiceName {
		t.Fatalf("request span = %+v: want in trace %s under %s, a server span of %s", r, agentTrace, agentSpan, telemetry.ServiceName)
	}
	if pol.TraceID != agentTrace || pol.ParentID != r.SpanID || pol.Attrs["gateway.capability"] != "fs:read" || len(pol.Attrs) != 1 {
		t.Fatalf("policy span = %+v, want a child of %s with its capability", pol, r.SpanID)
	}
	if w.TraceID != agentTrace || w.ParentID != r.SpanID || w.End.Sub(w.Start) < time.Second {
		t.Fatalf("wait span = %+v, want a child of %s lasting from its start", w, r.SpanID)
	}
}

// Traceparent names the span ctx carries, as the collector receives it,
// in W3C's form: sampled; nothing for a span not sampled (its request is
// not traced).
func TestTraceparent_NamesTheSpan(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	ctx := context.Background()
	p := rcv.Provider(t, nil)
	kept := map[string]string{}
	for _, parent := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203332-00", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203333-03-x"} {
		sctx, s := p.StartServer(ctx, "request "+parent, parent, "")
		kept[parent] = telemetry.Traceparent(sctx)
		s.End()
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rcv.Spans() {
		got[strings.TrimPrefix(s.Name, "request ")] = "00-" + s.TraceID + "-" + s.SpanID + "-01"
	}
	if _, ok := got["00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203332-00"]; ok || len(got) != 3 {
		t.Fatalf("exported %v, want the three sampled spans", got)
	}
	for parent, tp := range kept {
		if tp != got[parent] {
			t.Errorf("under %q: Traceparent = %q, want %q", parent, tp, got[parent])
		}
	}
}

// A span that ended says nothing more, however it is used afterwards
// (its record serves other spans by then): an attribute or a failure set
// late, a second End are ignored; a context that carries it still starts
// its children in its trace and names it in Traceparent.
func TestSpan_AfterItEnded(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	ctx := context.Background()
	p := rcv.Provider(t, nil)
	actx, a := p.StartServer(ctx, "a", "", "")
	a.String(telemetry.KeyAgent, "a1")
	kept := telemetry.Traceparent(actx)
	a.End()
	for range 10 { // other spans, which take its record
		_, o := p.StartServer(ctx, "other", "", "")
		o.String(telemetry.KeyAgent, "o")
		o.End()
	}
	a.String(telemetry.KeyAgent, "late")
	a.Fail("late")
	a.End()
	_, c := telemetry.Start(actx, "child")
	c.End()
	if got := telemetry.Traceparent(actx); got != kept {
		t.Errorf("Traceparent after the end = %q, want %q", got, kept)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	byName := map[string][]otlptest.Span{}
	for _, s := range rcv.Spans() {
		byName[s.Name] = append(byName[s.Name], s)
	}
	if len(byName["a"]) != 1 || len(byName["child"]) != 1 || len(byName["other"]) != 10 {
		t.Fatalf("received %d a, %d child, %d other; want 1, 1, 10", len(byName["a"]), len(byName["child"]), len(byName["other"]))
	}
	sa, sc := byName["a"][0], byName["child"][0]
	if sa.Attrs["gateway.agent"] != "a1" || sa.Failed || kept != "00-"+sa.TraceID+"-"+sa.SpanID+"-01" {
		t.Errorf("a = %+v, want agent a1, not failed, named by %s", sa, kept)
	}
	if sc.TraceID != sa.TraceID || sc.ParentID != sa.SpanID {
		t.Errorf("child = %+v, want a child of a (%s %s)", sc, sa.TraceID, sa.SpanID)
	}
	for _, o := range byName["other"] {
		if o.Attrs["gateway.agent"] != "o" || o.TraceID == sa.TraceID {
			t.Errorf("other = %+v, want agent o in a trace of its own", o)
		}
	}
}
