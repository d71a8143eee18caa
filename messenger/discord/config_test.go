package discord_test

import (
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/config/configtest"
	"github.com/metnos/gateway/messenger/discord"
)

// discordEnv holds the secret a [discord] names.
var discordEnv = map[string]string{
	"DISCORD_BOT_TOKEN":     "discord-SECRET-0012",
	"NOTIFY_WEBHOOK_SECRET": "hook-SECRET-0011",
	"METNOS_AGENT_TOKEN":    "agent-SECRET-0001-0123456789abcdef",
	"OTHER_AGENT_TOKEN":     "agent-SECRET-0002-0123456789abcdef",
}

// discordBase is an agent and an admin agent, for the route cases.
const discordBase = `
[[agents]]
id = "metnos"
token_env = "METNOS_AGENT_TOKEN"
notify = ["web", "discord"]

[[agents]]
id = "ops"
token_env = "OTHER_AGENT_TOKEN"
admin = true
`

// discordSection is a valid [discord] table (gateway mode).
const discordSection = `
[discord]
token_env = "DISCORD_BOT_TOKEN"
application_id = "1100000000000000001"
guild_id = "1100000000000000002"
channel_id = "1100000000000000003"
approvers = ["80351110224678912"]
admins = ["80351110224678913"]
`

func TestLoad_Discord(t *testing.T) {
	src := discordBase + discordSection + `
[[approvals.routes]]
capability = "mail:send"
notify = ["discord"]
approvers = ["agent:ops", "discord:80351110224678912", "discord:role:1100000000000000555"]
quorum = 4
`
	cfg, err := configtest.Load(t, src, discordEnv, discord.Section)
	if err != nil {
		t.Fatalf("a valid [discord] refused: %v", err)
	}
	d := discord.Of(cfg)
	if !d.Enabled() || d.HTTPMode() || d.Mode != discord.ModeGateway || d.APIURL != "https://discord.com/api/v10" ||
		d.Token != discordEnv["DISCORD_BOT_TOKEN"] || d.Language != "en" {
		t.Errorf("discord %+v", d)
	}
	if strings.Contains(discord.Of(cfg.Redacted()).Token, discordEnv["DISCORD_BOT_TOKEN"]) {
		t.Error("Redacted shows the Discord token")
	}
	if !strings.Contains(strings.Join(cfg.Secrets(), " "), discordEnv["DISCORD_BOT_TOKEN"]) {
		t.Error("Secrets misses the Discord token")
	}
}

func TestLoad_DiscordRefused(t *testing.T) {
	set := func(key, value string) string { // discordSection with one key changed or added
		lines := strings.Split(discordSection, "\n")
		out := []string{}
		done := false
		for _, l := range lines {
			if strings.HasPrefix(l, key+" =") {
				if value != "" {
					out = append(out, key+" = "+value)
				}
				done = true
				continue
			}
			out = append(out, l)
		}
		if !done {
			out = append(out, key+" = "+value)
		}
		return discordBase + strings.Join(out, "\n") + "\n"
	}
	tests := []struct{ name, toml, want string }{
		{"no application_id", set("application_id", ""), "discord.application_id: required when discord is enabled"},
		{"no guild_id", set("guild_id", ""), "discord.guild_id: required"},
		{"no channel_id", set("channel_id", ""), "discord.channel_id: required"},
		{"no approvers", set("approvers", ""), "discord.approvers: required"},
		{"http without public_key", set("mode", `"http"`), "discord.public_key: required when discord.mode is \"http\""},
		{"bad public_key", set("public_key", `"abc"`), "discord.public_key: want the application's public key: 64 hex digits"},
		{"unknown mode", set("mode", `"webhook"`), `discord.mode: "webhook": want "gateway" or "http"`},
		{"approver not an id", set("approvers", `["roberto"]`), `discord.approvers[0]: bad user id "roberto"`},
		{"approver a number", set("approvers", `[80351110224678912]`), "discord.approvers"},
		{"channel name", set("channel_id", `"approvals"`), `discord.channel_id: bad id "approvals"`},
		{"api_url slash", set("api_url", `"https://discord.com/api/v10/"`), "discord.api_url"},
		{"api_url scheme", set("api_url", `"ftp://discord.com/api/v10"`), "discord.api_url"},
		{"token env empty", set("token_env", `"NO_SUCH_DISCORD_TOKEN"`), "discord.token_env: NO_SUCH_DISCORD_TOKEN is empty"},
		{"unknown language", set("language", `"fr"`), `discord.language: unknown language "fr"`},
		{"not configured", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nnotify = [\"discord\"]\n",
			"agents[0].notify[0]: discord is not configured (set discord.token_env)"},
		{"bad role", discordBase + discordSection + "\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"discord:role:ops\"]\n",
			`approvals.routes[0].approvers[0]: bad Discord role id "ops"`},
		{"bad user", discordBase + discordSection + "\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"discord:@roberto\"]\n",
			`approvals.routes[0].approvers[0]: bad Discord user id "@roberto"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			configtest.Refused(t, tc.toml, discordEnv, []string{tc.want}, []string{discordEnv["DISCORD_BOT_TOKEN"]}, discord.Section)
		})
	}
}

func TestDiscordSection_Example(t *testing.T) {
	configtest.ExampleCovers(t, discord.Section)
	cfg, err := configtest.Load(t, config.ExampleWith(discord.Section), discordEnv, discord.Section)
	if err != nil {
		t.Fatalf("the example with [discord] does not load: %v", err)
	}
	if d := discord.Of(cfg); !d.Enabled() || d.ChannelID != "1100000000000000003" || d.Mode != discord.ModeGateway {
		t.Errorf("discord %+v", d)
	}
}
