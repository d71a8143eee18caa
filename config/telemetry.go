package config

import (
	"net/url"
	"strings"
)

// Telemetry is the optional [telemetry] table: OpenTelemetry traces of
// each request, exported over OTLP (docs/telemetry.md). It is off unless
// OTLPEndpoint, or OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT in the environment, names a collector;
// the other OTEL_* variables are the exporter's (headers, timeout, TLS),
// read by package telemetry.
type Telemetry struct {
	// OTLPEndpoint is the collector's base URL ("http://127.0.0.1:4318"):
	// spans go to OTLPEndpoint/v1/traces over HTTP, to its host and port
	// over gRPC. "" = off.
	OTLPEndpoint string `toml:"otlp_endpoint"`
	// Protocol is TelemetryHTTP (the default) or TelemetryGRPC.
	Protocol string `toml:"protocol"`
}

// The values of telemetry.protocol (OTLP's names, as in
// OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	TelemetryHTTP = "http/protobuf"
	TelemetryGRPC = "grpc"
)

func (c *Config) validateTelemetry(p *problems) {
	if e := c.Telemetry.OTLPEndpoint; e != "" {
		u, perr := url.Parse(e)
		switch err := httpURL(e); {
		case perr == nil && u.User != nil:
			// A collector's key is a secret: never in the file (nor
			// repeated in this message).
			p.add("telemetry.otlp_endpoint", "holds credentials; give the collector's key in OTEL_EXPORTER_OTLP_HEADERS instead")
		case err != nil:
			p.add("telemetry.otlp_endpoint", "%q: %v", e, err)
		case u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(e, " <>|"):
			p.add("telemetry.otlp_endpoint", "%q: want the collector's base URL (scheme, host, port), no query or fragment", e)
		}
	}
	switch c.Telemetry.Protocol {
	case TelemetryHTTP, TelemetryGRPC:
	default:
		p.add("telemetry.protocol", "unknown protocol %q (want %s or %s)", c.Telemetry.Protocol, TelemetryHTTP, TelemetryGRPC)
	}
}
