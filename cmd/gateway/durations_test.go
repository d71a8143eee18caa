package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCLI_DurationsAsInTheConfig: --ttl takes "90d" as policy.grant_ttl
// does, and refuses a bad one with the config file's words.
func TestCLI_DurationsAsInTheConfig(t *testing.T) {
	cli := sqliteCLI(t)
	before := time.Now()
	if code, _, errs := cli("policy", "grant", "--channel", "web", "--sender", "owner", "--capability", "fs:read", "--target", "/srv/*", "--ttl", "90d"); code != 0 {
		t.Fatalf("policy grant --ttl 90d: exit %d, %s", code, errs)
	}
	_, out, _ := cli("policy", "grants")
	var g struct {
		ExpiresAt time.Time `json:"expires_at"`
	}
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("policy grants: %q: %v", out, err)
	}
	if lo, hi := before.Add(90*24*time.Hour), time.Now().Add(90*24*time.Hour); g.ExpiresAt.Before(lo.Truncate(time.Second)) || g.ExpiresAt.After(hi) {
		t.Errorf("--ttl 90d: expires %s, want 90 days from now", g.ExpiresAt)
	}
	code, _, errs := cli("policy", "grant", "--channel", "web", "--sender", "owner", "--capability", "fs:read", "--target", "/srv/*", "--ttl", "90 days")
	if code != exitUsage || !strings.Contains(errs, `--ttl: bad duration "90 days" (want e.g. "90s", "10m", "2160h" or "90d")`) {
		t.Errorf("--ttl '90 days': exit %d, %q", code, errs)
	}
	if code, _, errs := cli("policy", "grant", "--channel", "web", "--sender", "owner", "--capability", "fs:read", "--target", "/srv/*", "--ttl", "-1h"); code != exitUsage || !strings.Contains(errs, "negative") {
		t.Errorf("--ttl -1h: exit %d, %q", code, errs)
	}
	if code, _, errs := cli("ask", "--capability", "fs:read", "--wait", "1x"); code != exitUsage || !strings.Contains(errs, `bad duration "1x"`) {
		t.Errorf("ask --wait 1x: exit %d, %q", code, errs)
	}
}
