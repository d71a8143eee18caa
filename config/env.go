// The environment over the file: the GATEWAY_* variables Load applies last.

package config

import (
	"strconv"
	"strings"
)

// Environment variables Load reads besides the *_env names in the file.
const (
	EnvConfig         = "GATEWAY_CONFIG"         // the config file (see DefaultPath)
	EnvListen         = "GATEWAY_LISTEN"         // overrides server.listen
	EnvDatabaseURL    = "GATEWAY_DATABASE_URL"   // the DSN when storage.dsn_env is empty
	EnvGrantsDB       = "METNOS_GRANTS_DB"       // overrides storage.path
	EnvJudgeThreshold = "METNOS_JUDGE_THRESHOLD" // overrides vaglio.judge_threshold
	EnvJudgeKind      = "METNOS_JUDGE_KIND"      // overrides vaglio.judge_kind
)

// applyEnv applies the environment overrides and resolves every secret a
// *_env key names. Empty secrets are left for Validate to report.
// With opt.SkipAgentTokens the agents' tokens are not read.
func applyEnv(cfg *Config, getenv func(string) string, opt LoadOptions, p *problems) {
	if v := getenv(EnvListen); v != "" {
		cfg.Server.Listen = v
	}
	if v := getenv(EnvGrantsDB); v != "" {
		cfg.Storage.Path = ExpandHome(v, getenv)
	}
	if v := getenv(EnvJudgeThreshold); v != "" {
		t, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case err != nil:
			p.add(EnvJudgeThreshold, "bad number %q (want 0 to 1, e.g. 0.30)", v)
		case !(t >= 0 && t <= 1):
			p.add(EnvJudgeThreshold, "%v is out of range (want 0 to 1)", t)
		default:
			cfg.Vaglio.JudgeThreshold = t
		}
	}
	if v := strings.TrimSpace(getenv(EnvJudgeKind)); v != "" {
		if v != JudgeRuleBased && v != JudgeLLM {
			p.add(EnvJudgeKind, "unknown judge %q (want %s or %s)", v, JudgeRuleBased, JudgeLLM)
		} else {
			cfg.Vaglio.JudgeKind = v
		}
	}
	if cfg.Storage.DSNEnv != "" {
		cfg.Storage.DSN = getenv(cfg.Storage.DSNEnv)
	} else {
		cfg.Storage.DSN = getenv(EnvDatabaseURL)
	}
	resolve := func(name string, dst *string) {
		if name != "" && !opt.SkipSecrets {
			*dst = getenv(name)
		}
	}
	for i := range cfg.Agents {
		if !opt.SkipAgentTokens {
			resolve(cfg.Agents[i].TokenEnv, &cfg.Agents[i].Token)
		}
	}
	resolve(cfg.Web.AdminTokenEnv, &cfg.Web.AdminToken)
	for i := range cfg.Policy.Notify {
		resolve(cfg.Policy.Notify[i].WebhookSecretEnv, &cfg.Policy.Notify[i].WebhookSecret)
	}
	resolve(cfg.Vaglio.LLM.APIKeyEnv, &cfg.Vaglio.LLM.APIKey)
	for i := range cfg.MCP.Servers {
		if s := &cfg.MCP.Servers[i]; s.TokenEnv != "" {
			s.Token = getenv(s.TokenEnv) // read even with SkipSecrets, as it always was
		}
	}
	for _, s := range cfg.sections {
		if !opt.SkipSecrets {
			readSecrets(s.value, getenv)
		}
		s.value.Resolve()
	}
}
