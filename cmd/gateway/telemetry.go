package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/telemetry"
)

// startTelemetry builds the tracing [telemetry] and the OTEL_* variables
// ask for: nil when they ask for none (the default).
func startTelemetry(e *env, cfg config.Config, log *slog.Logger) (*telemetry.Provider, error) {
	c := telemetry.Config{Endpoint: cfg.Telemetry.OTLPEndpoint, Protocol: cfg.Telemetry.Protocol}
	r, err := telemetry.Resolve(c, e.getenv)
	if err != nil {
		return nil, exitError{exitFail, err.Error()}
	}
	tel, err := telemetry.New(e.ctx, c, e.getenv, log)
	if err != nil {
		return nil, err
	}
	if tel != nil {
		// The endpoint itself is not logged: one from the environment
		// may carry credentials.
		log.Info("telemetry: each request is a trace, exported over OTLP", "protocol", r.Protocol)
	}
	return tel, nil
}

// stopTelemetryWait bounds how long a stopping gateway tries to export
// the spans still queued.
const stopTelemetryWait = 5 * time.Second

// stopTelemetry exports what is queued and stops; a collector that does
// not answer costs at most stopTelemetryWait.
func stopTelemetry(tel *telemetry.Provider, log *slog.Logger) {
	if tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTelemetryWait)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("telemetry: spans not exported at shutdown", "err", err)
	}
}
