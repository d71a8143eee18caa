// The [discord] table: its keys, what an empty one means, and its checks;
// kind.go registers it.

package discord

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
)

// The discord.mode values.
const (
	ModeGateway = "gateway"
	ModeHTTP    = "http"
)

// DefaultAPIURL is the default discord.api_url.
const DefaultAPIURL = "https://discord.com/api/v10"

// Config is the [discord] table. It is enabled by setting token_env.
type Config struct {
	// Chat holds approvers, admins and language: Discord user ids; the
	// admins revoke grants and see the rules and the audit.
	messenger.Chat[string]
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
	// Mode is how taps arrive: "gateway" (the websocket, the default) or
	// "http" (the interactions endpoint /discord/interactions).
	Mode string `toml:"mode"`
	// APIURL is the versioned REST base, "https://discord.com/api/v10" by
	// default; the websocket's address comes from its GET /gateway/bot.
	APIURL string `toml:"api_url"`
}

// Enabled reports whether a bot token is configured.
func (d Config) Enabled() bool { return d.TokenEnv != "" || d.Token != "" }

// HTTPMode reports whether taps arrive on the interactions endpoint.
func (d Config) HTTPMode() bool { return d.Mode == ModeHTTP }

// EnableKey is the key that enables Discord.
func (d *Config) EnableKey() string { return "token_env" }

// ApproverExample is a Discord user id.
func (d *Config) ApproverExample() string { return "80351110224678912" }

var (
	// A Discord id is a snowflake: a decimal number, 17-20 digits today
	// (https://discord.com/developers/docs/reference#snowflakes).
	snowflakeRE  = regexp.MustCompile(`^[1-9][0-9]{5,19}$`)
	ed25519HexRE = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// CheckApprover reads a route's "discord:<user id>" or
// "discord:role:<role id>" (a group).
func (d *Config) CheckApprover(user string) (bool, error) {
	role, isRole := strings.CutPrefix(user, "role:")
	switch {
	case isRole && !snowflakeRE.MatchString(role):
		return true, fmt.Errorf("bad Discord role id %q (the role's numeric id, as discord:role:<id>)", role)
	case !isRole && !snowflakeRE.MatchString(user):
		return false, fmt.Errorf("bad Discord user id %q (a numeric id; Developer Mode, Copy User ID)", user)
	}
	return isRole, nil
}

// Validate checks [discord].
func (d *Config) Validate(p config.Problems, _ *config.Config) {
	if d.Enabled() {
		p.Secret("token_env", d.TokenEnv, d.Token, true)
		for _, req := range []struct{ key, val, what string }{
			{"application_id", d.ApplicationID, "the application's id, from the Developer Portal"},
			{"guild_id", d.GuildID, "the server's id"},
			{"channel_id", d.ChannelID, "the channel cards are posted to"},
		} {
			if req.val == "" {
				p.Add(req.key, "required when discord is enabled (%s)", req.what)
			}
		}
		if d.HTTPMode() && d.PublicKey == "" {
			p.Add("public_key", "required when discord.mode is \"http\" (it verifies /discord/interactions)")
		}
	}
	for _, id := range []struct{ key, val string }{
		{"application_id", d.ApplicationID}, {"guild_id", d.GuildID}, {"channel_id", d.ChannelID},
	} {
		if id.val != "" && !snowflakeRE.MatchString(id.val) {
			p.Add(id.key, "bad id %q (a numeric id; Developer Mode, Copy ID)", id.val)
		}
	}
	d.Check(p, Name, d.Enabled(), func(id string) string {
		if !snowflakeRE.MatchString(id) {
			return fmt.Sprintf("bad user id %q (a numeric id as a string, e.g. \"80351110224678912\")", id)
		}
		return ""
	})
	if d.PublicKey != "" && !ed25519HexRE.MatchString(d.PublicKey) {
		p.Add("public_key", "want the application's public key: 64 hex digits")
	}
	if d.Mode != ModeGateway && d.Mode != ModeHTTP {
		p.Add("mode", "%q: want \"gateway\" or \"http\"", d.Mode)
	}
	if err := config.HTTPURL(d.APIURL); err != nil {
		p.Add("api_url", "%q: %v", d.APIURL, err)
	} else if strings.HasSuffix(d.APIURL, "/") || strings.ContainsAny(d.APIURL, "?#") {
		p.Add("api_url", "%q: want the versioned REST base without a trailing \"/\" (e.g. https://discord.com/api/v10)", d.APIURL)
	}
}

// Resolve fills an empty mode and api_url with their defaults.
func (d *Config) Resolve() {
	if d.Mode == "" {
		d.Mode = ModeGateway
	}
	if d.APIURL == "" {
		d.APIURL = DefaultAPIURL
	}
}
