// The [slack] table: its keys, what an empty one means, and its checks;
// kind.go registers it.

package slack

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// DefaultAPIURL is the default slack.api_url.
const DefaultAPIURL = "https://slack.com/api/"

// Config is the [slack] table. It is enabled by setting bot_token_env.
type Config struct {
	// Chat holds approvers, admins and language: Slack member ids; the
	// admins revoke grants from Slack.
	messenger.Chat[string]
	// BotTokenEnv names the variable holding the bot token (xoxb-…).
	BotTokenEnv string `toml:"bot_token_env"`
	// BotToken is the resolved bot token (secret).
	BotToken string `toml:"-"`
	// SigningSecretEnv names the variable holding the signing secret that
	// verifies /slack/interactions and /slack/commands. Required unless Socket Mode.
	SigningSecretEnv string `toml:"signing_secret_env"`
	// SigningSecret is the resolved signing secret (secret).
	SigningSecret string `toml:"-"`
	// AppTokenEnv names the variable holding an app-level token (xapp-…);
	// setting it selects Socket Mode.
	AppTokenEnv string `toml:"app_token_env"`
	// AppToken is the resolved app-level token (secret).
	AppToken string `toml:"-"`
	// ChannelID is where cards are posted (an ID such as C0123456, not a name:
	// chat.update needs the ID).
	ChannelID string `toml:"channel_id"`
	// APIURL is the Web API base, "https://slack.com/api/" by default; it ends in "/".
	APIURL string `toml:"api_url"`
}

// Enabled reports whether a bot token is configured.
func (s Config) Enabled() bool { return s.BotTokenEnv != "" || s.BotToken != "" }

// SocketMode reports whether an app-level token is configured.
func (s Config) SocketMode() bool { return s.AppTokenEnv != "" || s.AppToken != "" }

// EnableKey is the key that enables Slack.
func (s *Config) EnableKey() string { return "bot_token_env" }

// ApproverExample is a Slack member ID.
func (s *Config) ApproverExample() string { return "U0123456" }

var (
	slackIDRE   = regexp.MustCompile(`^[A-Z0-9]+$`)
	slackUserRE = regexp.MustCompile(`^[UWS][A-Z0-9]{1,31}$`)
)

// CheckApprover reads a route's "slack:<member id>" or "slack:<user
// group id>" (S…, a group).
func (s *Config) CheckApprover(user string) (bool, error) {
	group := strings.HasPrefix(user, "S")
	if !slackUserRE.MatchString(user) {
		return group, fmt.Errorf("bad Slack id %q (a member ID such as U0123456, or a user group ID such as S0123456)", user)
	}
	return group, nil
}

// Validate checks [slack].
func (s *Config) Validate(p config.Problems, _ *config.Config) {
	if s.Enabled() {
		p.Secret("bot_token_env", s.BotTokenEnv, s.BotToken, true)
		if !s.SocketMode() && s.SigningSecretEnv == "" && s.SigningSecret == "" {
			p.Add("signing_secret_env", "required unless slack.app_token_env is set (Socket Mode)")
		}
		if s.ChannelID == "" {
			p.Add("channel_id", "required when slack is enabled (the channel cards are posted to)")
		}
	}
	p.Secret("signing_secret_env", s.SigningSecretEnv, s.SigningSecret, false)
	p.Secret("app_token_env", s.AppTokenEnv, s.AppToken, false)
	if s.ChannelID != "" && !slackIDRE.MatchString(s.ChannelID) {
		p.Add("channel_id", "bad channel id %q (want the ID, e.g. C0123456, not the name)", s.ChannelID)
	}
	s.Check(p, Name, s.Enabled(), func(id string) string {
		if !slackIDRE.MatchString(id) {
			return fmt.Sprintf("bad user id %q (want the member ID, e.g. U0123456)", id)
		}
		return ""
	})
	if err := config.HTTPURL(s.APIURL); err != nil {
		p.Add("api_url", "%q: %v", s.APIURL, err)
	} else if !strings.HasSuffix(s.APIURL, "/") {
		p.Add("api_url", "%q must end with \"/\"", s.APIURL)
	}
}

// Resolve fills an empty api_url with its default.
func (s *Config) Resolve() {
	if s.APIURL == "" {
		s.APIURL = DefaultAPIURL
	}
}
