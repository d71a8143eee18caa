// Validate's checks of the surfaces a person decides on: the web page's
// users and the messengers' sections ([telegram], [slack], [discord]).

package config

import (
	"fmt"
	"net/url"
	"strings"
)

func (c *Config) validateTelegram(p *problems) {
	t := &c.Telegram
	if t.Enabled() {
		secret(p, "telegram.token_env", t.TokenEnv, t.Token, true)
		if t.ChatID == 0 {
			p.add("telegram.chat_id", "required when telegram is enabled (the chat cards are posted to)")
		}
		if len(t.Approvers) == 0 {
			p.add("telegram.approvers", "required when telegram is enabled (the user ids allowed to decide)")
		}
	}
	for i, id := range t.Approvers {
		if id <= 0 {
			p.add(fmt.Sprintf("telegram.approvers[%d]", i), "bad user id %d (Telegram user ids are positive)", id)
		}
	}
	for i, id := range t.Admins {
		if id <= 0 {
			p.add(fmt.Sprintf("telegram.admins[%d]", i), "bad user id %d (Telegram user ids are positive)", id)
		}
	}
	if strings.Count(t.APIEndpoint, "%") != 2 || strings.Count(t.APIEndpoint, "%s") != 2 {
		p.add("telegram.api_endpoint", "%q must hold two %%s, for the token and the method (like \"https://api.telegram.org/bot%%s/%%s\")", t.APIEndpoint)
	} else if err := httpURL(fmt.Sprintf(t.APIEndpoint, "T", "m")); err != nil {
		p.add("telegram.api_endpoint", "%q: %v", t.APIEndpoint, err)
	}
	if t.WebhookURL != "" {
		if err := httpURL(t.WebhookURL); err != nil {
			p.add("telegram.webhook_url", "%q: %v", t.WebhookURL, err)
		}
		if t.WebhookSecretEnv == "" && t.WebhookSecret == "" {
			p.add("telegram.webhook_secret_env", "required when telegram.webhook_url is set")
		}
	}
	secret(p, "telegram.webhook_secret_env", t.WebhookSecretEnv, t.WebhookSecret, false)
	if t.WebhookSecret != "" && !tgSecretRE.MatchString(t.WebhookSecret) {
		p.add("telegram.webhook_secret_env", "%s must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)", orName(t.WebhookSecretEnv))
	}
}

func orName(envName string) string {
	if envName == "" {
		return "the secret"
	}
	return envName
}

func (c *Config) validateSlack(p *problems) {
	s := &c.Slack
	if s.Enabled() {
		secret(p, "slack.bot_token_env", s.BotTokenEnv, s.BotToken, true)
		if !s.SocketMode() && s.SigningSecretEnv == "" && s.SigningSecret == "" {
			p.add("slack.signing_secret_env", "required unless slack.app_token_env is set (Socket Mode)")
		}
		if s.ChannelID == "" {
			p.add("slack.channel_id", "required when slack is enabled (the channel cards are posted to)")
		}
		if len(s.Approvers) == 0 {
			p.add("slack.approvers", "required when slack is enabled (the user ids allowed to decide)")
		}
	}
	secret(p, "slack.signing_secret_env", s.SigningSecretEnv, s.SigningSecret, false)
	secret(p, "slack.app_token_env", s.AppTokenEnv, s.AppToken, false)
	if s.ChannelID != "" && !slackIDRE.MatchString(s.ChannelID) {
		p.add("slack.channel_id", "bad channel id %q (want the ID, e.g. C0123456, not the name)", s.ChannelID)
	}
	slackIDs(p, "slack.approvers", s.Approvers)
	slackIDs(p, "slack.admins", s.Admins)
	if err := httpURL(s.APIURL); err != nil {
		p.add("slack.api_url", "%q: %v", s.APIURL, err)
	} else if !strings.HasSuffix(s.APIURL, "/") {
		p.add("slack.api_url", "%q must end with \"/\"", s.APIURL)
	}
}

func slackIDs(p *problems, key string, ids []string) {
	for i, id := range ids {
		if !slackIDRE.MatchString(id) {
			p.add(fmt.Sprintf("%s[%d]", key, i), "bad user id %q (want the member ID, e.g. U0123456)", id)
		}
	}
}

func (c *Config) validateDiscord(p *problems) {
	d := &c.Discord
	if d.Enabled() {
		secret(p, "discord.token_env", d.TokenEnv, d.Token, true)
		for _, req := range []struct{ key, val, what string }{
			{"discord.application_id", d.ApplicationID, "the application's id, from the Developer Portal"},
			{"discord.guild_id", d.GuildID, "the server's id"},
			{"discord.channel_id", d.ChannelID, "the channel cards are posted to"},
		} {
			if req.val == "" {
				p.add(req.key, "required when discord is enabled (%s)", req.what)
			}
		}
		if len(d.Approvers) == 0 {
			p.add("discord.approvers", "required when discord is enabled (the user ids allowed to decide)")
		}
		if d.HTTPMode() && d.PublicKey == "" {
			p.add("discord.public_key", "required when discord.mode is \"http\" (it verifies /discord/interactions)")
		}
	}
	for _, id := range []struct{ key, val string }{
		{"discord.application_id", d.ApplicationID}, {"discord.guild_id", d.GuildID}, {"discord.channel_id", d.ChannelID},
	} {
		if id.val != "" && !snowflakeRE.MatchString(id.val) {
			p.add(id.key, "bad id %q (a numeric id; Developer Mode, Copy ID)", id.val)
		}
	}
	for _, list := range []struct {
		key string
		ids []string
	}{{"discord.approvers", d.Approvers}, {"discord.admins", d.Admins}} {
		for i, id := range list.ids {
			if !snowflakeRE.MatchString(id) {
				p.add(fmt.Sprintf("%s[%d]", list.key, i), "bad user id %q (a numeric id as a string, e.g. \"80351110224678912\")", id)
			}
		}
	}
	if d.PublicKey != "" && !ed25519HexRE.MatchString(d.PublicKey) {
		p.add("discord.public_key", "want the application's public key: 64 hex digits")
	}
	if d.Mode != DiscordModeGateway && d.Mode != DiscordModeHTTP {
		p.add("discord.mode", "%q: want \"gateway\" or \"http\"", d.Mode)
	}
	if err := httpURL(d.APIURL); err != nil {
		p.add("discord.api_url", "%q: %v", d.APIURL, err)
	} else if strings.HasSuffix(d.APIURL, "/") || strings.ContainsAny(d.APIURL, "?#") {
		p.add("discord.api_url", "%q: want the versioned REST base without a trailing \"/\" (e.g. https://discord.com/api/v10)", d.APIURL)
	}
}

// httpURL accepts an absolute http or https URL with a host.
func httpURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("want an http or https URL")
	case u.Host == "":
		return fmt.Errorf("no host")
	}
	return nil
}

func (c *Config) validateWebUsers(p *problems) {
	if len(c.Web.Users) == 0 {
		p.add("web.users", "at least one [[web.users]] (the default is one user, %q)", DefaultWebUser)
	}
	seen := map[string]int{}
	for i, u := range c.Web.Users {
		key := fmt.Sprintf("web.users[%d].name", i)
		if !webLoginRE.MatchString(u.Name) {
			p.add(key, "bad name %q (want 1-64 of letters, digits, _, ., @ and -)", u.Name)
		} else if j, dup := seen[u.Name]; dup {
			p.add(key, "%q is already web.users[%d].name", u.Name, j)
		} else {
			seen[u.Name] = i
		}
		if u.Role != "" && u.Role != RoleAdmin && u.Role != RoleApprover {
			p.add(fmt.Sprintf("web.users[%d].role", i), "unknown role %q (want %q or %q)", u.Role, RoleAdmin, RoleApprover)
		}
	}
	admins := 0
	for _, u := range c.Web.Users {
		if c.Web.IsAdmin(u.Name) {
			admins++
		}
	}
	if len(c.Web.Users) > 0 && admins == 0 {
		p.add("web.users", "no user is an admin: give one role = %q (the default makes the first user the admin)", RoleAdmin)
	}
	switch c.Web.PolicyStepUp {
	case "", StepUpNone:
	case StepUpPasskey:
		if admins == 0 {
			p.add("web.policy_step_up", "%q needs an admin web user to sign policy changes", StepUpPasskey)
		}
	default:
		p.add("web.policy_step_up", "unknown value %q (want %q or %q)", c.Web.PolicyStepUp, StepUpNone, StepUpPasskey)
	}
}
