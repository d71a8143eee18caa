package config

import (
	"strings"
	"testing"
)

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
	src := routeBase + discordSection + `
[[approvals.routes]]
capability = "mail:send"
notify = ["telegram", "discord"]
approvers = ["telegram:5123456789", "discord:80351110224678912", "discord:role:1100000000000000555"]
quorum = 2
`
	cfg, err := Load(writeFile(t, src), true, env(baseEnv(t)))
	if err != nil {
		t.Fatalf("a valid [discord] refused: %v", err)
	}
	d := cfg.Discord
	if !d.Enabled() || d.HTTPMode() || d.Mode != DiscordModeGateway || d.APIURL != "https://discord.com/api/v10" ||
		d.Token != secrets["DISCORD_BOT_TOKEN"] || d.Language != "en" {
		t.Errorf("discord %+v", d)
	}
	if strings.Contains(cfg.Redacted().Discord.Token, secrets["DISCORD_BOT_TOKEN"]) {
		t.Error("Redacted shows the Discord token")
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
		return valid + strings.Join(out, "\n") + "\n"
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
		{"bad role", routeBase + discordSection + "\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"discord:role:ops\"]\n",
			`approvals.routes[0].approvers[0]: bad Discord role id "ops"`},
		{"bad user", routeBase + discordSection + "\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"discord:@roberto\"]\n",
			`approvals.routes[0].approvers[0]: bad Discord user id "@roberto"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, tc.toml), true, env(baseEnv(t)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
