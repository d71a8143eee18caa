package otlptest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/metnos/gateway/telemetry"
)

// Provider starts telemetry exporting every span to r, with getenv as its
// environment (nil: none) and its log discarded; tb fails if it does not
// start, and it is shut down when tb ends.
func (r *Receiver) Provider(tb testing.TB, getenv func(string) string) *telemetry.Provider {
	tb.Helper()
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p, err := telemetry.New(context.Background(), telemetry.Config{Endpoint: r.URL}, getenv, slog.New(slog.DiscardHandler))
	if err != nil || p == nil {
		tb.Fatalf("telemetry.New = %v, %v", p, err)
	}
	tb.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	return p
}
