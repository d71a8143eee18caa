package gateway_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/telemetry/otlptest"
)

// traceRT sends every request with a bearer token and a W3C traceparent.
type traceRT struct{ tok, traceparent string }

func (t traceRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.tok)
	if t.traceparent != "" {
		r.Header.Set("traceparent", t.traceparent)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestTelemetry_ChecksAndMCPCalls: POST /v1/check is traced only when the
// agent sends a sampled traceparent (a check span under the agent's,
// with its validate and policy children); a check with none, or with an
// unsampled one, makes no span. An MCP tool call is an mcp.tool span in
// the agent's trace (the traceparent of its HTTP request, or of its
// _meta), and what it asks of the API is its child: a request span for
// request_approval, a check span for check.
func TestTelemetry_ChecksAndMCPCalls(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	ctx := context.Background()
	tel := rcv.Provider(t, nil)
	cfg := gatewaytest.Config(t, gatewaytest.Agent("a1", otToken, false))
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Telemetry: tel})

	const (
		sampled   = "00-11111111111111111111111111111111-2222222222222222-01"
		unsampled = "00-33333333333333333333333333333333-4444444444444444-00"
		viaHeader = "00-55555555555555555555555555555555-6666666666666666-01"
		viaMeta   = "00-77777777777777777777777777777777-8888888888888888-01"
	)
	check := func(traceparent string) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.URL+"/v1/check", bytes.NewReader([]byte(`{"capability":"fs:read","target":"/tmp/x"}`)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: traceRT{otToken, traceparent}}).Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("check under %q: %v %v", traceparent, resp, err)
		}
		resp.Body.Close()
	}
	check("")
	check(unsampled)
	check(sampled)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: g.URL + "/mcp", HTTPClient: &http.Client{Transport: traceRT{otToken, viaHeader}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request_approval",
		Arguments: map[string]any{"capability": "llm:local", "intent": "summarise", "executor": "summariser"}})
	if err != nil || res.IsError {
		t.Fatalf("request_approval: %+v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "check", Meta: mcp.Meta{"traceparent": viaMeta},
		Arguments: map[string]any{"capability": "fs:read", "target": "/tmp/x"}})
	if err != nil || res.IsError {
		t.Fatalf("check: %+v %v", res, err)
	}
	cs.Close()
	if err := tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	byTrace := map[string][]otlptest.Span{}
	for _, s := range rcv.Spans() {
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	named := func(trace, name string) (otlptest.Span, bool) {
		for _, s := range byTrace[trace] {
			if s.Name == name {
				return s, true
			}
		}
		return otlptest.Span{}, false
	}
	for trace, spans := range byTrace {
		for _, s := range spans {
			if s.Name == "check" && trace != sampled[3:35] && trace != viaMeta[3:35] {
				t.Errorf("a check span in trace %s: only the checks an agent traces are", trace)
			}
		}
	}
	if len(byTrace[unsampled[3:35]]) != 0 {
		t.Errorf("an unsampled trace has spans: %+v", byTrace[unsampled[3:35]])
	}
	c, ok := named(sampled[3:35], "check")
	if !ok || c.ParentID != sampled[36:52] || c.Kind != "SPAN_KIND_SERVER" || c.Attrs["gateway.agent"] != "a1" ||
		c.Attrs["gateway.capability"] != "fs:read" || c.Attrs["gateway.outcome"] == "" {
		t.Fatalf("check span %+v (%v), want a server span under the agent's, naming a1, fs:read and the outcome", c, ok)
	}
	for _, name := range []string{"validate", "policy"} {
		if s, ok := named(sampled[3:35], name); !ok || s.ParentID != c.SpanID {
			t.Errorf("the check's %s span: %+v (%v), want a child of %s", name, s, ok, c.SpanID)
		}
	}
	for _, tc := range []struct{ trace, tool, child string }{
		{viaHeader, "request_approval", "request"},
		{viaMeta, "check", "check"},
	} {
		id := tc.trace[3:35]
		tool, ok := named(id, "mcp.tool")
		if !ok || tool.ParentID != tc.trace[36:52] || tool.Attrs["gateway.mcp.tool"] != tc.tool || tool.Attrs["gateway.agent"] != "a1" {
			t.Errorf("%s: mcp.tool span %+v (%v), want one under the agent's span, naming the tool and a1", tc.tool, tool, ok)
			continue
		}
		if s, ok := named(id, tc.child); !ok || s.ParentID != tool.SpanID {
			t.Errorf("%s: its %s span %+v (%v), want a child of the tool call's %s", tc.tool, tc.child, s, ok, tool.SpanID)
		}
	}
}
