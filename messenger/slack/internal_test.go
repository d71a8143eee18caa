package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage/storagetest"
)

// TestReplayStore_SharedAndExpiring: a key is refused a second time by
// any store over the same database (another replica, a restart); keys of
// one request go in together or not at all; a key older than the TTL
// counts as new; expired keys are deleted.
func TestReplayStore_SharedAndExpiring(t *testing.T) {
	db := storagetest.Open(t)
	now := time.Unix(1700000000, 0)
	clock := func() time.Time { return now }
	one := newReplayStore(db, 10*time.Minute, clock, slog.New(slog.DiscardHandler))
	two := newReplayStore(db, 10*time.Minute, clock, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if !one.firstTime(ctx, "a", "") || two.firstTime(ctx, "a") || one.firstTime(ctx, "x", "a") {
		t.Fatal("a second copy of a key passed")
	}
	if !two.firstTime(ctx, "x") {
		t.Error("a key of a refused request was kept")
	}
	if !one.firstTime(ctx, "") {
		t.Error("a request with no key at all must pass")
	}
	now = now.Add(11 * time.Minute)
	if !two.firstTime(ctx, "a") {
		t.Error("a key older than the TTL still blocks")
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM slack_replays`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d keys left after the prune (%v), want 1", n, err)
	}
}

func TestFatalCode(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{slackapi.SlackErrorResponse{Err: "invalid_auth"}, "invalid_auth"},
		{fmt.Errorf("wrapped: %w", slackapi.SlackErrorResponse{Err: "token_revoked"}), "token_revoked"},
		{slackapi.SlackErrorResponse{Err: "not_allowed_token_type"}, "not_allowed_token_type"},
		{slackapi.StatusCodeError{Code: 404, Status: "404 Not Found"}, "invalid_auth"},
		{slackapi.StatusCodeError{Code: 503, Status: "503"}, ""},
		{slackapi.SlackErrorResponse{Err: "internal_error"}, ""},
		{errors.New("dial tcp: connection refused"), ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := fatalCode(tt.err); got != tt.want {
			t.Errorf("fatalCode(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestTrustedResponseURL(t *testing.T) {
	api, _ := url.Parse("http://127.0.0.1:9999/")
	m := &Messenger{apiHost: api}
	tests := []struct {
		url  string
		want bool
	}{
		{"https://hooks.slack.com/actions/T1/1/abc", true},
		{"https://hooks.slack.com/commands/T1/1/abc", true},
		{"http://hooks.slack.com/actions/T1/1/abc", false},
		{"https://hooks.slack.com.evil.example/x", false},
		{"https://user:pw@hooks.slack.com/x", false},
		{"http://127.0.0.1:9999/response/1", true},
		{"http://127.0.0.1:8080/v1/grants", false},
		{"http://169.254.169.254/latest/meta-data", false},
		{"::not a url", false},
	}
	for _, tt := range tests {
		if got := m.trustedResponseURL(tt.url); got != tt.want {
			t.Errorf("trustedResponseURL(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}

func TestRateLimited_IsRetryAfterError(t *testing.T) {
	err := apiError("chat.postMessage", &slackapi.RateLimitedError{RetryAfter: 7 * time.Second})
	var ra approvals.RetryAfterError
	if !errors.As(err, &ra) || ra.RetryAfter() != 7*time.Second {
		t.Fatalf("%v is not a RetryAfterError of 7s", err)
	}
	if err := apiError("chat.update", errors.New("boom")); errors.As(err, &ra) {
		t.Errorf("%v claims a retry-after", err)
	}
}
