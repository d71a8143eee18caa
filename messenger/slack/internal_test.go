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
