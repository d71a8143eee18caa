package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/storage/storagetest"
)

// syncBuffer is a log sink the gateway's goroutines share with the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestOutage_PostgreSQLAway: with the database cut off under a running
// gateway, an agent's call is answered 503 unavailable with Retry-After
// (not 500 internal: "retry", not "a bug"), the outage is logged once when
// it begins and once when it ends (the expiry sweep no longer logs every
// second), and once the database is back the same call works.
func TestOutage_PostgreSQLAway(t *testing.T) {
	dsn, cut := storagetest.CutDSN(t, storagetest.FreshSchema(t))
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Storage.Driver, cfg.Storage.DSN = "postgres", dsn
	cfg.Vaglio.LogDir = filepath.Join(dir, "vaglio")
	a := config.NewAgent("a1")
	a.Token = "tok-a1-0123456789abcdef01"
	cfg.Agents = []config.Agent{a}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Home: dir, Logger: log, LeaderRetry: 100 * time.Millisecond})
	client := &http.Client{Timeout: 30 * time.Second}
	post := func() (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", g.URL+"/v1/requests",
			strings.NewReader(`{"capability":"llm:local"}`))
		req.Header.Set("Authorization", "Bearer tok-a1-0123456789abcdef01")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%v; the gateway's log:\n%s", err, logs.String())
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	waitLog := func(what string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(logs.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log within 20 s:\n%s", what, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if resp, body := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("before the outage: %d %s", resp.StatusCode, body)
	}

	cut.Cut()
	for range 5 {
		resp, body := post()
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != http.StatusServiceUnavailable || e.Error.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("during the outage: %d %s (Retry-After %q), want 503 unavailable with Retry-After",
				resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
	}
	waitLog("database unreachable")
	// Let the sweep fail a few more times (it runs every second).
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}

	cut.Restore()
	waitLog("database reachable again")
	if resp, body := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the outage: %d %s", resp.StatusCode, body)
	}
	out := logs.String()
	if n := strings.Count(out, "database unreachable"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "database reachable again"); n != 1 {
		t.Errorf("its end was logged %d times, want once:\n%s", n, out)
	}
	for _, noisy := range []string{"expiry sweep failed", "internal error", "level=ERROR msg=\"cards"} {
		if strings.Contains(out, noisy) {
			t.Errorf("the log has %q during the outage:\n%s", noisy, out)
		}
	}
}
