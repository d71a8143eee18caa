// The [telegram] table: its keys, what an empty one means, and its checks;
// kind.go registers it.

package telegram

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// DefaultAPIEndpoint is the default telegram.api_endpoint.
const DefaultAPIEndpoint = "https://api.telegram.org/bot%s/%s"

// Config is the [telegram] table. It is enabled by setting token_env.
type Config struct {
	// Chat holds approvers, admins and language: Telegram user ids; the
	// admins revoke grants with /revoke and the Revoke buttons of /grants
	// (unset: the first approver, see Revokers).
	messenger.Chat[int64]
	// TokenEnv names the variable holding the bot token.
	TokenEnv string `toml:"token_env"`
	// Token is the resolved bot token (secret).
	Token string `toml:"-"`
	// ChatID is where cards are posted (negative for groups).
	ChatID int64 `toml:"chat_id"`
	// APIEndpoint is the Bot API URL format, "https://api.telegram.org/bot%s/%s"
	// by default (token, method), as tgbotapi.NewBotAPIWithAPIEndpoint takes it.
	APIEndpoint string `toml:"api_endpoint"`
	// WebhookURL switches from long polling to webhook mode when set.
	WebhookURL string `toml:"webhook_url"`
	// WebhookSecretEnv names the variable holding the secret Telegram echoes in
	// X-Telegram-Bot-Api-Secret-Token. Required with WebhookURL.
	WebhookSecretEnv string `toml:"webhook_secret_env"`
	// WebhookSecret is the resolved webhook secret (secret).
	WebhookSecret string `toml:"-"`
}

// Revokers are the user ids that may revoke grants from Telegram: Admins,
// else the first approver (as the web page's first user is its admin).
func (t Config) Revokers() []int64 {
	if len(t.Admins) > 0 {
		return t.Admins
	}
	return t.Approvers[:min(len(t.Approvers), 1)]
}

// Authority says who may revoke grants from the chat, for `gateway
// config check`.
func (t *Config) Authority() string {
	return fmt.Sprintf("grants are revoked from the chat only by %v (telegram.admins; default: the first approver)", t.Revokers())
}

// Enabled reports whether a bot token is configured.
func (t Config) Enabled() bool { return t.TokenEnv != "" || t.Token != "" }

// EnableKey is the key that enables Telegram.
func (t *Config) EnableKey() string { return "token_env" }

// ApproverExample is a Telegram user id.
func (t *Config) ApproverExample() string { return "123456789" }

var tgUserRE = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)

// CheckApprover reads a route's "telegram:<user id>".
func (t *Config) CheckApprover(user string) (bool, error) {
	if !tgUserRE.MatchString(user) {
		return false, fmt.Errorf("bad Telegram user id %q (a positive number; /start tells you yours)", user)
	}
	return false, nil
}

// Telegram's secret_token: 1-256 characters, A-Z, a-z, 0-9, _ and -
// (https://core.telegram.org/bots/api#setwebhook).
var tgSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// Validate checks [telegram].
func (t *Config) Validate(p config.Problems, _ *config.Config) {
	if t.Enabled() {
		p.Secret("token_env", t.TokenEnv, t.Token, true)
		if t.ChatID == 0 {
			p.Add("chat_id", "required when telegram is enabled (the chat cards are posted to)")
		}
	}
	t.Check(p, Name, t.Enabled(), func(id int64) string {
		if id <= 0 {
			return fmt.Sprintf("bad user id %d (Telegram user ids are positive)", id)
		}
		return ""
	})
	if strings.Count(t.APIEndpoint, "%") != 2 || strings.Count(t.APIEndpoint, "%s") != 2 {
		p.Add("api_endpoint", "%q must hold two %%s, for the token and the method (like \"https://api.telegram.org/bot%%s/%%s\")", t.APIEndpoint)
	} else if err := config.HTTPURL(fmt.Sprintf(t.APIEndpoint, "T", "m")); err != nil {
		p.Add("api_endpoint", "%q: %v", t.APIEndpoint, err)
	}
	if t.WebhookURL != "" {
		if err := config.HTTPURL(t.WebhookURL); err != nil {
			p.Add("webhook_url", "%q: %v", t.WebhookURL, err)
		}
		if t.WebhookSecretEnv == "" && t.WebhookSecret == "" {
			p.Add("webhook_secret_env", "required when telegram.webhook_url is set")
		}
	}
	p.Secret("webhook_secret_env", t.WebhookSecretEnv, t.WebhookSecret, false)
	if t.WebhookSecret != "" && !tgSecretRE.MatchString(t.WebhookSecret) {
		name := t.WebhookSecretEnv
		if name == "" {
			name = "the secret"
		}
		p.Add("webhook_secret_env", "%s must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)", name)
	}
}

// Resolve fills an empty api_endpoint with its default.
func (t *Config) Resolve() {
	if t.APIEndpoint == "" {
		t.APIEndpoint = DefaultAPIEndpoint
	}
}
