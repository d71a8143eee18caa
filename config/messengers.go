// The surfaces a person decides on and their sections: the web page
// ([web]) and the messengers ([telegram], [slack], [discord]).

package config

// The places an agent's cards can go (agents[].notify).
const (
	NotifyWeb      = "web"
	NotifyTelegram = "telegram"
	NotifySlack    = "slack"
	NotifyDiscord  = "discord"
)

// Web is the [web] table. The web page is always on; every visit needs a
// session, started by a one-time login link (or the admin token).
type Web struct {
	// AdminTokenEnv names the variable holding the login token that lets
	// non-loopback clients in. Empty: non-loopback clients are refused.
	AdminTokenEnv string `toml:"admin_token_env"`
	// AdminToken is the resolved login token (secret).
	AdminToken string `toml:"-"`
	// Language of the web page: "en" (the default) or "it".
	Language string `toml:"language"`
	// PublicURL is the address people reach the web page at
	// (web.public_url, e.g. "https://gateway.example.com"). Cards link
	// there to a request's own page, /r/{id}, where every field is shown
	// whole; empty means cards name the path only.
	PublicURL string `toml:"public_url"`
	// Users are the people who log in to the web page ([[web.users]]),
	// each by a one-time link from `gateway login --user NAME`; a decision
	// taken there is "web:<name>". Default: one user, "owner".
	Users []WebUser `toml:"users"`
	// PolicyStepUp "passkey" makes every change of rules and grants on
	// the page an admin's passkey assertion over the change, and keeps the
	// admin agent's API from adding approve rules and grants; "" or
	// "none": a tap (and the admin agent may).
	PolicyStepUp string `toml:"policy_step_up"`
}

// WebUser is one [[web.users]] entry.
type WebUser struct {
	Name string `toml:"name"`
	// Role is RoleAdmin or RoleApprover; "" takes the default: the first
	// user is the admin, the others approvers (see Web.RoleOf).
	Role string `toml:"role"`
}

// The roles of a web user. An approver decides what routes and channels
// let them decide; only an admin adds or changes rules, grants, tokens
// and users' sessions.
const (
	RoleAdmin    = "admin"
	RoleApprover = "approver"
)

// RoleOf is the role of the web user name: the one configured, else admin
// for the first user and approver for the others; "" for no such user.
func (w Web) RoleOf(name string) string {
	for i, u := range w.Users {
		switch {
		case u.Name != name:
		case u.Role != "":
			return u.Role
		case i == 0:
			return RoleAdmin
		default:
			return RoleApprover
		}
	}
	return ""
}

// IsAdmin reports whether the web user name is an admin.
func (w Web) IsAdmin(name string) bool { return w.RoleOf(name) == RoleAdmin }

// PolicyPasskey reports whether policy changes on the page need an
// admin's passkey ([web] policy_step_up = "passkey").
func (w Web) PolicyPasskey() bool { return w.PolicyStepUp == StepUpPasskey }

// DefaultWebUser is the web user of a config that names none.
const DefaultWebUser = "owner"

// WebUser reports whether name is a configured web user.
func (w Web) WebUser(name string) bool {
	for _, u := range w.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}

// Telegram is the [telegram] table. It is enabled by setting token_env.
type Telegram struct {
	// TokenEnv names the variable holding the bot token.
	TokenEnv string `toml:"token_env"`
	// Token is the resolved bot token (secret).
	Token string `toml:"-"`
	// ChatID is where cards are posted (negative for groups).
	ChatID int64 `toml:"chat_id"`
	// Approvers are the Telegram user ids allowed to decide.
	Approvers []int64 `toml:"approvers"`
	// Admins are the Telegram user ids allowed to revoke grants from
	// Telegram (/revoke, the Revoke buttons of /grants), as the web page's
	// admins; unset: the first approver (see Revokers).
	Admins []int64 `toml:"admins"`
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
	// Language of cards, buttons, alerts and command answers: "en" (the
	// default) or "it".
	Language string `toml:"language"`
}

// Revokers are the user ids that may revoke grants from Telegram: Admins,
// else the first approver (as the web page's first user is its admin).
func (t Telegram) Revokers() []int64 {
	if len(t.Admins) > 0 {
		return t.Admins
	}
	return t.Approvers[:min(len(t.Approvers), 1)]
}

// Enabled reports whether a bot token is configured.
func (t Telegram) Enabled() bool { return t.TokenEnv != "" || t.Token != "" }

// Slack is the [slack] table. It is enabled by setting bot_token_env.
type Slack struct {
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

// Enabled reports whether a bot token is configured.
func (s Slack) Enabled() bool { return s.BotTokenEnv != "" || s.BotToken != "" }

// SocketMode reports whether an app-level token is configured.
func (s Slack) SocketMode() bool { return s.AppTokenEnv != "" || s.AppToken != "" }

// Discord is the [discord] table. It is enabled by setting token_env.
type Discord struct {
	// TokenEnv names the variable holding the bot token.
	TokenEnv string `toml:"token_env"`
	// Token is the resolved bot token (secret).
	Token string `toml:"-"`
	// ApplicationID is the application's id (slash commands are
	// registered under it; interaction follow-ups go to its webhook).
	ApplicationID string `toml:"application_id"`
	// PublicKey is the application's Ed25519 public key, hex: it verifies
	// /discord/interactions. Required in HTTP mode.
	PublicKey string `toml:"public_key"`
	// GuildID is the server the bot serves; ChannelID the channel cards
	// are posted to. Taps and commands from anywhere else are refused.
	GuildID   string `toml:"guild_id"`
	ChannelID string `toml:"channel_id"`
	// Approvers are the Discord user ids allowed to decide; Admins those
	// allowed to revoke grants and see the rules and the audit.
	Approvers []string `toml:"approvers"`
	Admins    []string `toml:"admins"`
	// Language of cards, buttons and command answers: "en" or "it".
	Language string `toml:"language"`
	// Mode is how taps arrive: "gateway" (the websocket, the default) or
	// "http" (the interactions endpoint /discord/interactions).
	Mode string `toml:"mode"`
	// APIURL is the versioned REST base, "https://discord.com/api/v10" by
	// default; the websocket's address comes from its GET /gateway/bot.
	APIURL string `toml:"api_url"`
}

// The discord.mode values.
const (
	DiscordModeGateway = "gateway"
	DiscordModeHTTP    = "http"
)

// Enabled reports whether a bot token is configured.
func (d Discord) Enabled() bool { return d.TokenEnv != "" || d.Token != "" }

// HTTPMode reports whether taps arrive on the interactions endpoint.
func (d Discord) HTTPMode() bool { return d.Mode == DiscordModeHTTP }
