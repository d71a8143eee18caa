package slack

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/metnos/gateway/approvals"
)

func TestReplayCache_ExpiresAndStaysBounded(t *testing.T) {
	now := time.Unix(1700000000, 0)
	c := newReplayCache(10*time.Minute, 3, func() time.Time { return now })
	if !c.firstTime("a", "") || c.firstTime("a") || c.firstTime("x", "a") {
		t.Fatal("a second copy of a key passed")
	}
	if !c.firstTime("") {
		t.Error("a request with no key at all must pass")
	}
	now = now.Add(11 * time.Minute)
	if !c.firstTime("a") {
		t.Error("a key older than the TTL still blocks")
	}
	for i := range 10 {
		c.firstTime(fmt.Sprint("k", i))
	}
	if len(c.seen) > 3 || len(c.order) > 3 {
		t.Errorf("cache holds %d keys (%d in order), limit 3", len(c.seen), len(c.order))
	}
	if c.firstTime("k9") {
		t.Error("the newest key was evicted")
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
