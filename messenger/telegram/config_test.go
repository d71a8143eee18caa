package telegram_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/config/configtest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/telegram"
)

// tgEnv holds the secrets a [telegram] names; none may show in an error.
var tgEnv = map[string]string{
	"TELEGRAM_BOT_TOKEN":      "123:tg-SECRET-0003",
	"TELEGRAM_WEBHOOK_SECRET": "tgwh-SECRET-0004",
	"NOTIFY_WEBHOOK_SECRET":   "hook-SECRET-0011",
	"METNOS_AGENT_TOKEN":      "agent-SECRET-0001-0123456789abcdef",
}

const tgValid = `
[[agents]]
id = "metnos"
token_env = "METNOS_AGENT_TOKEN"
notify = ["web", "telegram"]

[telegram]
token_env = "TELEGRAM_BOT_TOKEN"
chat_id = -100
approvers = [42, 43]
`

func tgSecrets() []string {
	return []string{tgEnv["TELEGRAM_BOT_TOKEN"], tgEnv["TELEGRAM_WEBHOOK_SECRET"]}
}

func TestTelegramSection_Defaults(t *testing.T) {
	cfg, err := configtest.Load(t, "", nil, telegram.Section)
	if err != nil {
		t.Fatal(err)
	}
	got := *telegram.Of(cfg)
	want := telegram.Config{APIEndpoint: "https://api.telegram.org/bot%s/%s", Chat: messenger.Chat[int64]{Language: "en"}}
	if !got.Enabled() && got.APIEndpoint == want.APIEndpoint && got.Language == want.Language && got.TokenEnv == "" {
		return
	}
	t.Errorf("defaults %+v, want %+v", got, want)
}

func TestTelegramSection_Loads(t *testing.T) {
	body := tgValid + "webhook_url = \"https://gw.example.com/tg\"\nwebhook_secret_env = \"TELEGRAM_WEBHOOK_SECRET\"\nlanguage = \"it\"\n" +
		"api_endpoint = \"\"\n[[approvals.routes]]\ncapability = \"*\"\nnotify = [\"telegram\"]\napprovers = [\"telegram:5123456789\", \"web:owner\"]\n"
	cfg, err := configtest.Load(t, body, tgEnv, telegram.Section)
	if err != nil {
		t.Fatal(err)
	}
	tg := telegram.Of(cfg)
	if !tg.Enabled() || tg.ChatID != -100 || tg.Token != tgEnv["TELEGRAM_BOT_TOKEN"] || tg.WebhookSecret != tgEnv["TELEGRAM_WEBHOOK_SECRET"] ||
		tg.Language != "it" || tg.APIEndpoint != "https://api.telegram.org/bot%s/%s" || !slices.Equal(tg.Revokers(), []int64{42}) {
		t.Errorf("telegram %+v", tg)
	}
	if s := cfg.Secrets(); !slices.Contains(s, tgEnv["TELEGRAM_BOT_TOKEN"]) || !slices.Contains(s, tgEnv["TELEGRAM_WEBHOOK_SECRET"]) {
		t.Error("Secrets misses Telegram's")
	}
	r := telegram.Of(cfg.Redacted())
	if r.Token != "[redacted]" || r.WebhookSecret != "[redacted]" || tg.Token != tgEnv["TELEGRAM_BOT_TOKEN"] {
		t.Errorf("redacted %+v", r)
	}
	r.Approvers[0] = 7
	if tg.Approvers[0] != 42 {
		t.Error("Redacted shares the approvers")
	}
}

func TestTelegramSection_Refused(t *testing.T) {
	tests := []struct {
		name  string
		toml  string
		unset []string
		want  []string
	}{
		{"type mismatch names key", "[telegram]\nchat_id = \"12\"\n", nil, []string{"telegram.chat_id: line 2: incompatible types"}},
		{"unknown language", "[telegram]\nlanguage = \"EN\"\n", nil, []string{"telegram.language: unknown language \"EN\""}},
		{"token empty", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\napprovers = [1]\n", []string{"TELEGRAM_BOT_TOKEN"},
			[]string{"telegram.token_env: TELEGRAM_BOT_TOKEN is empty"}},
		{"no chat", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\napprovers = [1]\n", nil, []string{"telegram.chat_id: required"}},
		{"no approvers", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\n", nil, []string{"telegram.approvers: required"}},
		{"bad approver", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\napprovers = [1, -2]\n", nil,
			[]string{"telegram.approvers[1]: bad user id -2"}},
		{"bad admin", "[telegram]\nadmins = [0]\n", nil, []string{"telegram.admins[0]: bad user id 0"}},
		{"webhook without secret", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\napprovers = [1]\nwebhook_url = \"https://gw.example.com/telegram\"\n", nil,
			[]string{"telegram.webhook_secret_env: required"}},
		{"webhook secret empty", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\napprovers = [1]\nwebhook_url = \"https://gw.example.com/telegram\"\nwebhook_secret_env = \"TELEGRAM_WEBHOOK_SECRET\"\n",
			[]string{"TELEGRAM_WEBHOOK_SECRET"}, []string{"telegram.webhook_secret_env: TELEGRAM_WEBHOOK_SECRET is empty"}},
		{"webhook secret of the wrong shape", "[telegram]\nwebhook_url = \"https://x.example/\"\nwebhook_secret_env = \"TELEGRAM_BOT_TOKEN\"\n", nil,
			[]string{"telegram.webhook_secret_env: TELEGRAM_BOT_TOKEN must be 1-256 characters"}},
		{"bad webhook url", "[telegram]\ntoken_env = \"TELEGRAM_BOT_TOKEN\"\nchat_id = 1\napprovers = [1]\nwebhook_url = \"gw.example.com\"\nwebhook_secret_env = \"TELEGRAM_WEBHOOK_SECRET\"\n", nil,
			[]string{"telegram.webhook_url:"}},
		{"bad endpoint", "[telegram]\napi_endpoint = \"http://127.0.0.1:1/bot\"\n", nil, []string{"telegram.api_endpoint:"}},
		{"secret in file", "[telegram]\ntoken = \"123:tg-SECRET-0003\"\n", nil,
			[]string{"telegram.token: unknown key (secrets are never read from the file"}},
		{"secret as a name", "[telegram]\ntoken_env = \"123:tg-SECRET-0003\"\n", nil, []string{"telegram.token_env"}},
		{"route's bad user", tgValid + "[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"telegram:roberto\"]\n", nil,
			[]string{`approvals.routes[0].approvers[0]: bad Telegram user id "roberto"`}},
		{"not configured", "[[agents]]\nid = \"a\"\ntoken_env = \"METNOS_AGENT_TOKEN\"\nnotify = [\"telegram\"]\n[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"telegram:1\"]\n" +
			"[[policy.notify]]\ncapability = \"*\"\ntarget = \"*\"\ndeliveries = [\"telegram\"]\n[approvals]\ndigest = \"0 18 * * *\"\n", nil,
			[]string{"agents[0].notify[0]: telegram is not configured (set telegram.token_env)",
				"approvals.routes[0].approvers[0]: telegram is not configured (set telegram.token_env)",
				"policy.notify[0].deliveries[0]: telegram is not configured",
				"approvals.digest: no messenger to post the digest on (configure [telegram])"}},
		{"approver not channel:user", tgValid + "[[approvals.routes]]\ncapability = \"*\"\napprovers = [\"roberto\"]\n", nil,
			[]string{`(e.g. "telegram:123456789", "web:owner", "agent:ops")`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range tgEnv {
				e[k] = v
			}
			for _, k := range tc.unset {
				delete(e, k)
			}
			configtest.Refused(t, tc.toml, e, tc.want, tgSecrets(), telegram.Section)
		})
	}
}

func TestTelegramSection_Example(t *testing.T) {
	configtest.ExampleCovers(t, telegram.Section)
	cfg, err := configtest.Load(t, config.ExampleWith(telegram.Section), tgEnv, telegram.Section)
	if err != nil {
		t.Fatalf("the example with [telegram] does not load: %v", err)
	}
	if tg := telegram.Of(cfg); !tg.Enabled() || tg.ChatID != 123456789 || !strings.HasPrefix(tg.Token, "123:") {
		t.Errorf("telegram %+v", tg)
	}
}
