package slack_test

import (
	"slices"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/config/configtest"
	"github.com/metnos/gateway/messenger/slack"
)

// slackEnv holds the secrets a [slack] names; none may show in an error.
var slackEnv = map[string]string{
	"SLACK_BOT_TOKEN":       "xoxb-SECRET-0005",
	"SLACK_SIGNING_SECRET":  "sign-SECRET-0006",
	"SLACK_APP_TOKEN":       "xapp-SECRET-0007",
	"NOTIFY_WEBHOOK_SECRET": "hook-SECRET-0011",
	"METNOS_AGENT_TOKEN":    "agent-SECRET-0001-0123456789abcdef",
}

const slackValid = `
[[agents]]
id = "metnos"
token_env = "METNOS_AGENT_TOKEN"
notify = ["web", "slack"]

[slack]
bot_token_env = "SLACK_BOT_TOKEN"
signing_secret_env = "SLACK_SIGNING_SECRET"
channel_id = "C0123456"
approvers = ["U0123456"]
`

func slackSecrets() []string {
	return []string{slackEnv["SLACK_BOT_TOKEN"], slackEnv["SLACK_SIGNING_SECRET"], slackEnv["SLACK_APP_TOKEN"]}
}

func TestSlackSection_Loads(t *testing.T) {
	body := slackValid + "app_token_env = \"SLACK_APP_TOKEN\"\napi_url = \"\"\n" +
		"[[approvals.routes]]\ncapability = \"*\"\nnotify = [\"slack\"]\napprovers = [\"slack:U0APPROVER\", \"slack:S0OPSGROUP\"]\nquorum = 3\n"
	cfg, err := configtest.Load(t, body, slackEnv, slack.Section)
	if err != nil {
		t.Fatal(err)
	}
	s := slack.Of(cfg)
	if !s.Enabled() || !s.SocketMode() || s.BotToken != slackEnv["SLACK_BOT_TOKEN"] || s.SigningSecret != slackEnv["SLACK_SIGNING_SECRET"] ||
		s.AppToken != slackEnv["SLACK_APP_TOKEN"] || s.APIURL != "https://slack.com/api/" || s.Language != "en" {
		t.Errorf("slack %+v", s)
	}
	for _, v := range slackSecrets() {
		if !slices.Contains(cfg.Secrets(), v) {
			t.Error("Secrets misses one of Slack's")
		}
	}
	r := slack.Of(cfg.Redacted())
	if r.BotToken != "[redacted]" || r.SigningSecret != "[redacted]" || r.AppToken != "[redacted]" {
		t.Errorf("redacted %+v", r)
	}
	r.Approvers[0] = "U0CHANGED"
	if s.Approvers[0] != "U0123456" {
		t.Error("Redacted shares the approvers")
	}
}

func TestSlackSection_Refused(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		unset []string
		want  []string
	}{
		{"unknown language", "[slack]\nlanguage = \"de\"\n", nil, []string{"slack.language: unknown language \"de\""}},
		{"signing secret empty", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\nsigning_secret_env = \"SLACK_SIGNING_SECRET\"\nchannel_id = \"C1\"\napprovers = [\"U1\"]\n",
			[]string{"SLACK_SIGNING_SECRET"}, []string{"slack.signing_secret_env: SLACK_SIGNING_SECRET is empty"}},
		{"no signing secret", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\nchannel_id = \"C1\"\napprovers = [\"U1\"]\n", nil,
			[]string{"slack.signing_secret_env: required unless slack.app_token_env"}},
		{"bot token empty", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\napp_token_env = \"SLACK_APP_TOKEN\"\nchannel_id = \"C1\"\napprovers = [\"U1\"]\n",
			[]string{"SLACK_BOT_TOKEN"}, []string{"slack.bot_token_env: SLACK_BOT_TOKEN is empty"}},
		{"app token empty", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\napp_token_env = \"SLACK_APP_TOKEN\"\nchannel_id = \"C1\"\napprovers = [\"U1\"]\n",
			[]string{"SLACK_APP_TOKEN"}, []string{"slack.app_token_env: SLACK_APP_TOKEN is empty"}},
		{"no channel", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\napp_token_env = \"SLACK_APP_TOKEN\"\napprovers = [\"U1\"]\n", nil,
			[]string{"slack.channel_id: required"}},
		{"channel name", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\napp_token_env = \"SLACK_APP_TOKEN\"\nchannel_id = \"#approvals\"\napprovers = [\"U1\"]\n", nil,
			[]string{`slack.channel_id: bad channel id "#approvals"`}},
		{"no approvers", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\napp_token_env = \"SLACK_APP_TOKEN\"\nchannel_id = \"C1\"\n", nil,
			[]string{"slack.approvers: required"}},
		{"bad admin", "[slack]\nadmins = [\"roberto\"]\n", nil, []string{`slack.admins[0]: bad user id "roberto"`}},
		{"api url without slash", "[slack]\napi_url = \"http://127.0.0.1:9/api\"\n", nil,
			[]string{`slack.api_url: "http://127.0.0.1:9/api" must end with "/"`}},
		{"secrets never shown", "[slack]\nbot_token_env = \"SLACK_BOT_TOKEN\"\nsigning_secret_env = \"SLACK_SIGNING_SECRET\"\napp_token_env = \"SLACK_APP_TOKEN\"\n", nil,
			[]string{"slack.channel_id: required"}},
		{"route's bad id", slackValid + "[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"slack:roberto\"]\n", nil,
			[]string{`approvals.routes[0].approvers[0]: bad Slack id "roberto"`}},
		{"route unreachable without a group", slackValid + "[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"slack:U0A\"]\nquorum = 2\n", nil,
			[]string{"approvals.routes[0].quorum: 2 can never be reached"}},
		{"not configured", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"slack:U1\"]\nescalate_after = \"5m\"\nescalate_to = [\"slack\"]\n", nil,
			[]string{"approvals.routes[0].approvers[0]: slack is not configured (set slack.bot_token_env)",
				"approvals.routes[0].escalate_to[0]: slack is not configured (set slack.bot_token_env)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range slackEnv {
				e[k] = v
			}
			for _, k := range tc.unset {
				delete(e, k)
			}
			configtest.Refused(t, tc.toml, e, tc.want, slackSecrets(), slack.Section)
		})
	}
}

func TestSlackSection_Example(t *testing.T) {
	configtest.ExampleCovers(t, slack.Section)
	cfg, err := configtest.Load(t, config.ExampleWith(slack.Section), slackEnv, slack.Section)
	if err != nil {
		t.Fatalf("the example with [slack] does not load: %v", err)
	}
	if s := slack.Of(cfg); !s.Enabled() || !s.SocketMode() || s.ChannelID != "C0123456" || s.APIURL != "https://slack.com/api/" {
		t.Errorf("slack %+v", s)
	}
}
