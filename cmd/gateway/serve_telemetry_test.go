package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/telemetry/otlptest"
)

// TestServe_Telemetry runs the real binary with [telemetry] otlp_endpoint
// naming an in-process OTLP receiver: a request is traced, in the agent's
// trace, and the spans still queued are exported when SIGTERM stops it.
func TestServe_Telemetry(t *testing.T) {
	rcv := otlptest.New()
	defer rcv.Close()
	bin := gatewayBinary(t)
	dir := t.TempDir()
	cfgPath := childConfig(t, dir)
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n[telemetry]\notlp_endpoint = \"" + rcv.URL + "\"\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c := startChild(t, bin, cfgPath, filepath.Dir(cfgPath))
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("POST", c.URL+"/v1/requests", strings.NewReader(`{"capability":"llm:local","intent":"summarise"}`))
	req.Header.Set("Authorization", "Bearer "+childAgentToken)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("request = %s\n%s", resp.Status, c.stderr)
	}
	if code, _ := c.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d\n%s", code, c.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spans, ok := rcv.WaitFor(ctx, func(s []otlptest.Span) bool {
		for _, sp := range s {
			if sp.Name == "request" && sp.TraceID == traceID && sp.Service == telemetry.ServiceName {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no request span of trace %s from %s among %d spans\n%s", traceID, telemetry.ServiceName, len(spans), c.stderr)
	}
	if !strings.Contains(c.stderr.String(), "telemetry: each request is a trace") {
		t.Errorf("serve did not say telemetry is on:\n%s", c.stderr)
	}
}

// TestServe_TelemetryBadProtocol: a protocol the gateway cannot speak,
// from the environment, stops serve at start with the variable named.
func TestServe_TelemetryBadProtocol(t *testing.T) {
	dir := t.TempDir()
	cfgPath := childConfig(t, dir)
	vars := map[string]string{"HOME": dir, "CHILD_AGENT_TOKEN": childAgentToken, "CHILD_ADMIN_TOKEN": childAdminToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
	r := runCLI(context.Background(), func(k string) string { return vars[k] }, "", "serve", "--config", cfgPath)
	if r.code == 0 || !strings.Contains(r.stderr, `OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol "http/json"`) {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}
