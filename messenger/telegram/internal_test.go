package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
)

func TestDedupe_ForgetsOldest(t *testing.T) {
	d := newDedupe(3)
	for _, id := range []int{1, 2, 3} {
		if !d.add(id) {
			t.Fatalf("%d reported as seen", id)
		}
	}
	if d.add(2) {
		t.Error("a repeated id was reported as new")
	}
	d.add(4) // evicts 1
	if !d.add(1) {
		t.Error("the oldest id was not forgotten")
	}
	if d.add(4) || d.add(3) {
		t.Error("recent ids were forgotten")
	}
	if len(d.ids) != 3 {
		t.Errorf("holds %d ids, want 3", len(d.ids))
	}
}

func TestCommandName(t *testing.T) {
	cases := []struct {
		text, name, args string
		forUs            bool
	}{
		{"/grants", "grants", "", true},
		{"/revoke 12", "revoke", "12", true},
		{"/Revoke@Gateway_Test_Bot  #12 ", "revoke", "#12", true},
		{"/pending@other_bot", "pending", "", false},
		{"/start@gateway_test_bot", "start", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			name, args, forUs := commandName(tc.text, "gateway_test_bot")
			if name != tc.name || args != tc.args || forUs != tc.forUs {
				t.Errorf("got %q %q %v", name, args, forUs)
			}
		})
	}
	if _, _, forUs := commandName("/pending@other_bot", ""); !forUs {
		t.Error("with the username unknown, a command must not be dropped")
	}
}

func TestParseRef(t *testing.T) {
	for ref, ok := range map[string]bool{"-100123:7": true, cardRef(-5, 9): true, "7": false, "a:b": false, "1:0": false, "": false} {
		if _, _, got := parseRef(ref); got != ok {
			t.Errorf("parseRef(%q) ok = %v", ref, got)
		}
	}
	if c, m, _ := parseRef(cardRef(-100123, 42)); c != -100123 || m != 42 {
		t.Errorf("round trip: %d %d", c, m)
	}
}

func TestAPIError_RedactsAndClassifies(t *testing.T) {
	const token = "123456:AAH-secret_Token"
	b := &Bot{redactor: strings.NewReplacer(token, redactedToken, url.PathEscape(token), redactedToken,
		url.QueryEscape(token), redactedToken)}
	netErr := &url.Error{Op: "Post", URL: "https://api.telegram.org/bot" + token + "/sendMessage",
		Err: context.DeadlineExceeded}
	e := b.apiError("sendMessage", fmt.Errorf("wrapped: %w", netErr))
	if strings.Contains(e.Error(), token) || !strings.Contains(e.Error(), redactedToken) {
		t.Errorf("error text %q", e.Error())
	}
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Error("a timeout is no longer recognisable")
	}
	var ue *url.Error
	if errors.As(e, &ue) {
		t.Error("the URL-carrying error is still reachable by errors.As")
	}

	flood := b.sendError("sendMessage", &tgbotapi.Error{Code: http.StatusTooManyRequests,
		Message: "Too Many Requests: retry after 7", ResponseParameters: tgbotapi.ResponseParameters{RetryAfter: 7}})
	var ra approvals.RetryAfterError
	if !errors.As(flood, &ra) || ra.RetryAfter() != 7*time.Second {
		t.Errorf("429 is not a RetryAfterError of 7 s: %v", flood)
	}
	plain := b.sendError("sendMessage", &tgbotapi.Error{Code: 500, Message: "Internal Server Error"})
	if errors.As(plain, &ra) {
		t.Error("a 500 claims a retry-after")
	}
	var te *Error
	if !errors.As(plain, &te) || te.Code != 500 {
		t.Errorf("500 classified as %v", plain)
	}
}
