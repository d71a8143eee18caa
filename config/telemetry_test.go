package config

import (
	"strings"
	"testing"
)

// An endpoint holding credentials is refused without repeating them: a
// config error is printed and logged.
func TestLoad_TelemetryCredentialsNotRepeated(t *testing.T) {
	_, err := Load(writeFile(t, "[telemetry]\notlp_endpoint = \"https://user:hunter2@otlp.example.com\"\n"), true, env(baseEnv(t)))
	if err == nil || !strings.Contains(err.Error(), "telemetry.otlp_endpoint") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want telemetry.otlp_endpoint refused without its password", err)
	}
}
