// The [slack] section: its table, defaults, secrets and checks, a
// registered messenger (Section).

package slack

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/locale"
)

// Config is the [slack] table. It is enabled by setting bot_token_env.
type Config struct {
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
	// Approvers are the Slack user ids allowed to decide.
	Approvers []string `toml:"approvers"`
	// Admins are the Slack user ids allowed to revoke grants from Slack.
	Admins []string `toml:"admins"`
	// APIURL is the Web API base, "https://slack.com/api/" by default; it ends in "/".
	APIURL string `toml:"api_url"`
	// Language of cards, buttons, the Home tab and command answers: "en"
	// (the default) or "it".
	Language string `toml:"language"`
}

// DefaultAPIURL is the default slack.api_url.
const DefaultAPIURL = "https://slack.com/api/"

//go:embed example.toml
var example string

// Section registers [slack].
var Section = config.SectionSpec{Name: Name, Example: example, New: func() config.Section {
	return &Config{APIURL: DefaultAPIURL, Language: string(locale.DefaultLang)}
}}

// Of is c's [slack] section, nil when it is not registered.
func Of(c config.Config) *Config {
	s, _ := c.Section(Name).(*Config)
	return s
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

// Resolve fills an empty api_url with its default and reads the secrets.
func (s *Config) Resolve(getenv func(string) string, secrets bool) {
	if s.APIURL == "" {
		s.APIURL = DefaultAPIURL
	}
	if !secrets {
		return
	}
	for _, r := range []struct {
		name string
		dst  *string
	}{{s.BotTokenEnv, &s.BotToken}, {s.SigningSecretEnv, &s.SigningSecret}, {s.AppTokenEnv, &s.AppToken}} {
		if r.name != "" {
			*r.dst = getenv(r.name)
		}
	}
}

// Secrets are the bot token, the signing secret and the app-level token,
// when set.
func (s *Config) Secrets() []string {
	return slices.DeleteFunc([]string{s.BotToken, s.SigningSecret, s.AppToken}, func(v string) bool { return v == "" })
}

// Redacted is a copy with the tokens and the signing secret hidden.
func (s *Config) Redacted() config.Section {
	r := *s
	r.BotToken = config.Redact(s.BotToken)
	r.SigningSecret = config.Redact(s.SigningSecret)
	r.AppToken = config.Redact(s.AppToken)
	r.Approvers = slices.Clone(s.Approvers)
	r.Admins = slices.Clone(s.Admins)
	return &r
}

// Validate checks [slack].
func (s *Config) Validate(p config.Problems, _ *config.Config) {
	p.Language("language", s.Language)
	if s.Enabled() {
		p.Secret("bot_token_env", s.BotTokenEnv, s.BotToken, true)
		if !s.SocketMode() && s.SigningSecretEnv == "" && s.SigningSecret == "" {
			p.Add("signing_secret_env", "required unless slack.app_token_env is set (Socket Mode)")
		}
		if s.ChannelID == "" {
			p.Add("channel_id", "required when slack is enabled (the channel cards are posted to)")
		}
		if len(s.Approvers) == 0 {
			p.Add("approvers", "required when slack is enabled (the user ids allowed to decide)")
		}
	}
	p.Secret("signing_secret_env", s.SigningSecretEnv, s.SigningSecret, false)
	p.Secret("app_token_env", s.AppTokenEnv, s.AppToken, false)
	if s.ChannelID != "" && !slackIDRE.MatchString(s.ChannelID) {
		p.Add("channel_id", "bad channel id %q (want the ID, e.g. C0123456, not the name)", s.ChannelID)
	}
	for _, list := range []struct {
		key string
		ids []string
	}{{"approvers", s.Approvers}, {"admins", s.Admins}} {
		for i, id := range list.ids {
			if !slackIDRE.MatchString(id) {
				p.Add(fmt.Sprintf("%s[%d]", list.key, i), "bad user id %q (want the member ID, e.g. U0123456)", id)
			}
		}
	}
	if err := config.HTTPURL(s.APIURL); err != nil {
		p.Add("api_url", "%q: %v", s.APIURL, err)
	} else if !strings.HasSuffix(s.APIURL, "/") {
		p.Add("api_url", "%q must end with \"/\"", s.APIURL)
	}
}
