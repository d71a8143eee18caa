package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	durationpkg "github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/policy"
)

var osGetenv = os.Getenv

// Load reads the configuration: defaults, then the TOML file at path, then the
// environment (overrides and the secrets named by *_env keys), then Validate.
// With explicit set (a --config flag or $GATEWAY_CONFIG) the file must exist;
// otherwise a missing file means defaults. A nil getenv means os.Getenv.
//
// Every problem found is returned in one *Error; on error the Config is zero.
func Load(path string, explicit bool, getenv func(string) string) (Config, error) {
	return LoadWith(path, explicit, getenv, LoadOptions{})
}

// LoadOptions relaxes Load for commands that never serve nor authenticate agents.
type LoadOptions struct {
	// SkipAgentTokens leaves every agents[].token_env unresolved: Agent.Token
	// stays empty and an unset variable is no error (the name must still be a
	// valid variable name). For the database-only commands (policy, audit,
	// prune, migrate), which an admin may run without the agents' secrets.
	// Never for serve or config check.
	SkipAgentTokens bool
	// SkipSecrets goes further: no secret a *_env key names is read (the
	// agents' tokens, the messengers', the web admin token, webhook
	// secrets, the LLM judge's key), and an unset one is no error. For the
	// commands that only open the database or find the server (policy,
	// audit, prune, migrate, login, logout; ask, hook and mcp without
	// GATEWAY_URL), which an admin or an agent runs without the server's
	// secrets. The database's DSN is still read. Never for serve or
	// config check.
	SkipSecrets bool
}

// LoadWith is Load with options; LoadWith(…, LoadOptions{}) is Load.
func LoadWith(path string, explicit bool, getenv func(string) string, opt LoadOptions) (Config, error) {
	getenv = orEnv(getenv)
	cfg := defaults(getenv)
	var p problems
	file := ""
	if explicit && path == "" {
		return Config{}, errors.New("config file: empty path")
	}
	if path != "" {
		data, err := os.ReadFile(path)
		switch {
		case err == nil:
			file = path
			if err := decode(&cfg, data, filepath.Dir(path), getenv, &p); err != nil {
				return Config{}, &Error{File: file, Problems: []error{err}}
			}
		case errors.Is(err, fs.ErrNotExist) && !explicit:
			// No file at the default place: run on defaults.
		case errors.Is(err, fs.ErrNotExist):
			return Config{}, fmt.Errorf("config file %s: %w", path, fs.ErrNotExist)
		default:
			return Config{}, fmt.Errorf("read config file: %w", err)
		}
	}
	if opt.SkipSecrets {
		opt.SkipAgentTokens = true
	}
	applyEnv(&cfg, getenv, opt, &p)
	cfg.validate(&p, opt)
	if opt.SkipSecrets {
		p = slices.DeleteFunc(p, func(err error) bool { return errors.Is(err, errSecretUnset) })
	}
	if len(p) > 0 {
		return Config{}, &Error{File: file, Problems: p}
	}
	if path != "" {
		cfg.File, _ = filepath.Abs(path)
	}
	return cfg, nil
}

// The shape of the file. Pointers tell "absent, keep the default" from a
// value; the decoder leaves unknown keys in MetaData.Undecoded.
type (
	fileConfig struct {
		Server    *fileServer    `toml:"server"`
		Storage   *fileStorage   `toml:"storage"`
		Policy    *filePolicy    `toml:"policy"`
		Vaglio    *fileVaglio    `toml:"vaglio"`
		Approvals *fileApprovals `toml:"approvals"`
		Agents    []fileAgent    `toml:"agents"`
		Web       *fileWeb       `toml:"web"`
		Telegram  *fileTelegram  `toml:"telegram"`
		Slack     *fileSlack     `toml:"slack"`
		Discord   *fileDiscord   `toml:"discord"`
		Hooks     *fileHooks     `toml:"hooks"`
		MCP       *fileMCP       `toml:"mcp"`
		Log       *fileLog       `toml:"log"`
	}
	fileServer struct {
		Listen   *string `toml:"listen"`
		Timezone *string `toml:"timezone"`
	}
	fileStorage struct {
		Path   *string `toml:"path"`
		Driver *string `toml:"driver"`
		DSNEnv *string `toml:"dsn_env"`
	}
	filePolicy struct {
		GrantTTL   *string      `toml:"grant_ttl"`
		StaleAfter *string      `toml:"stale_after"`
		Rules      []Rule       `toml:"rules"`
		Notify     []fileNotify `toml:"notify"`
	}
	fileNotify struct {
		Capability       string   `toml:"capability"`
		Target           string   `toml:"target"`
		Agent            string   `toml:"agent"`
		SenderID         string   `toml:"sender_id"`
		Channel          string   `toml:"channel"`
		Deliveries       []string `toml:"deliveries"`
		WebhookURL       string   `toml:"webhook_url"`
		WebhookSecretEnv string   `toml:"webhook_secret_env"`
	}
	fileVaglio struct {
		JudgeThreshold *float64       `toml:"judge_threshold"`
		LogDir         *string        `toml:"log_dir"`
		JudgeKind      *string        `toml:"judge_kind"`
		LLM            *fileVaglioLLM `toml:"llm"`
	}
	fileVaglioLLM struct {
		API            *string `toml:"api"`
		URL            *string `toml:"url"`
		Model          *string `toml:"model"`
		APIKeyEnv      *string `toml:"api_key_env"`
		Timeout        *string `toml:"timeout"`
		MaxCallsPerDay *int    `toml:"max_calls_per_day"`
		MaxCallsTotal  *int    `toml:"max_calls_per_day_total"`
		OnFailure      *string `toml:"on_failure"`
		SendArgValues  *bool   `toml:"send_arg_values"`
	}
	fileApprovals struct {
		Timeout       *string     `toml:"timeout"`
		PruneSchedule *string     `toml:"prune_schedule"`
		Retention     *string     `toml:"retention"`
		AllowFor      *[]string   `toml:"allow_for"`
		SessionTTL    *string     `toml:"session_ttl"`
		Digest        *string     `toml:"digest"`
		Routes        []fileRoute `toml:"routes"`
	}
	fileRoute struct {
		Capability    string   `toml:"capability"`
		Agent         string   `toml:"agent"`
		Critical      *bool    `toml:"critical"`
		Notify        []string `toml:"notify"`
		Approvers     []string `toml:"approvers"`
		Quorum        *int     `toml:"quorum"`
		EscalateAfter *string  `toml:"escalate_after"`
		EscalateTo    []string `toml:"escalate_to"`
		RemindEvery   *string  `toml:"remind_every"`
		StepUp        *string  `toml:"step_up"`
	}
	fileAgent struct {
		ID                string        `toml:"id"`
		TokenEnv          string        `toml:"token_env"`
		Autonomy          *string       `toml:"autonomy"`
		Channel           *string       `toml:"channel"`
		SenderID          *string       `toml:"sender_id"`
		Notify            *[]string     `toml:"notify"`
		Rate              *string       `toml:"rate"`
		CardsPerMinute    *int          `toml:"cards_per_minute"`
		Admin             bool          `toml:"admin"`
		AllowCapabilities []string      `toml:"allow_capabilities"`
		DenyCapabilities  []string      `toml:"deny_capabilities"`
		Principals        []string      `toml:"principals"`
		Mode              *string       `toml:"mode"`
		Callbacks         []string      `toml:"callbacks"`
		MaxPending        *int          `toml:"max_pending"`
		MaxStreams        *int          `toml:"max_streams"`
		MaxChildren       *int          `toml:"max_children"`
		Workspace         []string      `toml:"workspace"`
		Run               *fileAgentRun `toml:"run"`
		Home              *string       `toml:"home"`
	}
	fileWeb struct {
		AdminTokenEnv *string `toml:"admin_token_env"`
		Language      *string `toml:"language"`
		PublicURL     *string `toml:"public_url"`
		PolicyStepUp  *string `toml:"policy_step_up"`
		Users         *[]struct {
			Name string `toml:"name"`
			Role string `toml:"role"`
		} `toml:"users"`
	}
	fileTelegram struct {
		TokenEnv         *string  `toml:"token_env"`
		ChatID           *int64   `toml:"chat_id"`
		Approvers        *[]int64 `toml:"approvers"`
		APIEndpoint      *string  `toml:"api_endpoint"`
		WebhookURL       *string  `toml:"webhook_url"`
		WebhookSecretEnv *string  `toml:"webhook_secret_env"`
		Language         *string  `toml:"language"`
	}
	fileSlack struct {
		BotTokenEnv      *string   `toml:"bot_token_env"`
		SigningSecretEnv *string   `toml:"signing_secret_env"`
		AppTokenEnv      *string   `toml:"app_token_env"`
		ChannelID        *string   `toml:"channel_id"`
		Approvers        *[]string `toml:"approvers"`
		Admins           *[]string `toml:"admins"`
		APIURL           *string   `toml:"api_url"`
		Language         *string   `toml:"language"`
	}
	fileDiscord struct {
		TokenEnv      *string   `toml:"token_env"`
		ApplicationID *string   `toml:"application_id"`
		PublicKey     *string   `toml:"public_key"`
		GuildID       *string   `toml:"guild_id"`
		ChannelID     *string   `toml:"channel_id"`
		Approvers     *[]string `toml:"approvers"`
		Admins        *[]string `toml:"admins"`
		Language      *string   `toml:"language"`
		Mode          *string   `toml:"mode"`
		APIURL        *string   `toml:"api_url"`
	}
	fileHooks struct {
		ClaudeCode *fileHookAgent `toml:"claude_code"`
		Codex      *fileHookAgent `toml:"codex"`
		Gemini     *fileHookAgent `toml:"gemini"`
		Cursor     *fileHookAgent `toml:"cursor"`
		Copilot    *fileHookAgent `toml:"copilot"`
		Qwen       *fileHookAgent `toml:"qwen"`
		OpenCode   *fileHookAgent `toml:"opencode"`
	}
	fileHookAgent struct {
		Wait        *string           `toml:"wait"`
		UnknownTool *string           `toml:"unknown_tool"`
		Tools       map[string]string `toml:"tools"`
	}
	fileLog struct {
		Format *string `toml:"format"`
		Level  *string `toml:"level"`
	}
)

// decode lays the file over cfg. A syntax or type error stops everything and
// is returned; problems with single keys go to p so that all are reported.
func decode(cfg *Config, data []byte, dir string, getenv func(string) string, p *problems) error {
	var f fileConfig
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return tomlError(err)
	}
	unknownKeys(data, md, p)

	if s := f.Server; s != nil {
		set(&cfg.Server.Listen, s.Listen)
		set(&cfg.Server.Timezone, s.Timezone)
	}
	if s := f.Storage; s != nil {
		if s.Path != nil {
			cfg.Storage.Path = filePath(*s.Path, dir, getenv)
		}
		set(&cfg.Storage.Driver, s.Driver)
		set(&cfg.Storage.DSNEnv, s.DSNEnv)
	}
	if s := f.Policy; s != nil {
		duration(p, "policy.grant_ttl", s.GrantTTL, &cfg.Policy.GrantTTL)
		duration(p, "policy.stale_after", s.StaleAfter, &cfg.Policy.StaleAfter)
		cfg.Policy.Rules = s.Rules
		for _, n := range s.Notify {
			cfg.Policy.Notify = append(cfg.Policy.Notify, Notify{NotifyPattern: policy.NotifyPattern{
				Capability: n.Capability, Target: n.Target, Agent: n.Agent, SenderID: n.SenderID, Channel: n.Channel,
				Deliveries: n.Deliveries, WebhookURL: n.WebhookURL}, WebhookSecretEnv: n.WebhookSecretEnv})
		}
	}
	if s := f.Vaglio; s != nil {
		set(&cfg.Vaglio.JudgeThreshold, s.JudgeThreshold)
		if s.LogDir != nil {
			cfg.Vaglio.LogDir = filePath(*s.LogDir, dir, getenv)
		}
		set(&cfg.Vaglio.JudgeKind, s.JudgeKind)
		if l := s.LLM; l != nil {
			set(&cfg.Vaglio.LLM.API, l.API)
			set(&cfg.Vaglio.LLM.URL, l.URL)
			set(&cfg.Vaglio.LLM.Model, l.Model)
			set(&cfg.Vaglio.LLM.APIKeyEnv, l.APIKeyEnv)
			duration(p, "vaglio.llm.timeout", l.Timeout, &cfg.Vaglio.LLM.Timeout)
			set(&cfg.Vaglio.LLM.MaxCallsPerDay, l.MaxCallsPerDay)
			set(&cfg.Vaglio.LLM.MaxCallsPerDayTotal, l.MaxCallsTotal)
			set(&cfg.Vaglio.LLM.OnFailure, l.OnFailure)
			set(&cfg.Vaglio.LLM.SendArgValues, l.SendArgValues)
		}
	}
	if s := f.Approvals; s != nil {
		duration(p, "approvals.timeout", s.Timeout, &cfg.Approvals.Timeout)
		set(&cfg.Approvals.PruneSchedule, s.PruneSchedule)
		set(&cfg.Approvals.Digest, s.Digest)
		duration(p, "approvals.retention", s.Retention, &cfg.Approvals.Retention)
		duration(p, "approvals.session_ttl", s.SessionTTL, &cfg.Approvals.SessionTTL)
		if s.AllowFor != nil {
			cfg.Approvals.AllowFor = []time.Duration{}
			for i, v := range *s.AllowFor {
				var d time.Duration
				duration(p, fmt.Sprintf("approvals.allow_for[%d]", i), &v, &d)
				cfg.Approvals.AllowFor = append(cfg.Approvals.AllowFor, d)
			}
		}
		for i, fr := range s.Routes {
			key := fmt.Sprintf("approvals.routes[%d]", i)
			rt := Route{Capability: fr.Capability, Agent: fr.Agent, Critical: fr.Critical, Notify: fr.Notify,
				Approvers: fr.Approvers, Quorum: 1, EscalateTo: fr.EscalateTo}
			set(&rt.Quorum, fr.Quorum)
			set(&rt.StepUp, fr.StepUp)
			duration(p, key+".escalate_after", fr.EscalateAfter, &rt.EscalateAfter)
			duration(p, key+".remind_every", fr.RemindEvery, &rt.RemindEvery)
			cfg.Approvals.Routes = append(cfg.Approvals.Routes, rt)
		}
	}
	for i, fa := range f.Agents {
		a := NewAgent(fa.ID)
		a.TokenEnv = fa.TokenEnv
		if fa.Autonomy != nil {
			if l, err := policy.ParseLevel(*fa.Autonomy); err != nil {
				p.wrap(fmt.Sprintf("agents[%d].autonomy", i), err)
			} else {
				a.Autonomy = l
			}
		}
		set(&a.Channel, fa.Channel)
		set(&a.SenderID, fa.SenderID)
		set(&a.Notify, fa.Notify)
		if fa.Rate != nil {
			a.Rate, a.RateCount, a.RatePer = *fa.Rate, 0, 0
		}
		set(&a.CardsPerMinute, fa.CardsPerMinute)
		a.Admin = fa.Admin
		a.AllowCapabilities = fa.AllowCapabilities
		a.DenyCapabilities = fa.DenyCapabilities
		a.Principals = fa.Principals
		a.Workspace = fa.Workspace
		a.Run = fa.Run.agentRun(getenv)
		set(&a.Home, fa.Home)
		if fa.Mode != nil {
			if m, err := policy.ParseMode(*fa.Mode); err != nil {
				p.wrap(fmt.Sprintf("agents[%d].mode", i), err)
			} else {
				a.Mode = m
			}
		}
		a.Callbacks = fa.Callbacks
		set(&a.MaxPending, fa.MaxPending)
		set(&a.MaxStreams, fa.MaxStreams)
		set(&a.MaxChildren, fa.MaxChildren)
		cfg.Agents = append(cfg.Agents, a)
	}
	if s := f.Web; s != nil {
		set(&cfg.Web.AdminTokenEnv, s.AdminTokenEnv)
		set(&cfg.Web.Language, s.Language)
		set(&cfg.Web.PublicURL, s.PublicURL)
		set(&cfg.Web.PolicyStepUp, s.PolicyStepUp)
		if s.Users != nil {
			cfg.Web.Users = nil
			for _, u := range *s.Users {
				cfg.Web.Users = append(cfg.Web.Users, WebUser{Name: u.Name, Role: u.Role})
			}
		}
	}
	if s := f.Telegram; s != nil {
		set(&cfg.Telegram.TokenEnv, s.TokenEnv)
		set(&cfg.Telegram.ChatID, s.ChatID)
		set(&cfg.Telegram.Approvers, s.Approvers)
		if s.APIEndpoint != nil && *s.APIEndpoint != "" { // "" = the default, as SPEC §10 shows
			cfg.Telegram.APIEndpoint = *s.APIEndpoint
		}
		set(&cfg.Telegram.WebhookURL, s.WebhookURL)
		set(&cfg.Telegram.WebhookSecretEnv, s.WebhookSecretEnv)
		set(&cfg.Telegram.Language, s.Language)
	}
	if s := f.Slack; s != nil {
		set(&cfg.Slack.BotTokenEnv, s.BotTokenEnv)
		set(&cfg.Slack.SigningSecretEnv, s.SigningSecretEnv)
		set(&cfg.Slack.AppTokenEnv, s.AppTokenEnv)
		set(&cfg.Slack.ChannelID, s.ChannelID)
		set(&cfg.Slack.Approvers, s.Approvers)
		set(&cfg.Slack.Admins, s.Admins)
		if s.APIURL != nil && *s.APIURL != "" { // "" = the default, as SPEC §10 shows
			cfg.Slack.APIURL = *s.APIURL
		}
		set(&cfg.Slack.Language, s.Language)
	}
	if s := f.Discord; s != nil {
		set(&cfg.Discord.TokenEnv, s.TokenEnv)
		set(&cfg.Discord.ApplicationID, s.ApplicationID)
		set(&cfg.Discord.PublicKey, s.PublicKey)
		set(&cfg.Discord.GuildID, s.GuildID)
		set(&cfg.Discord.ChannelID, s.ChannelID)
		set(&cfg.Discord.Approvers, s.Approvers)
		set(&cfg.Discord.Admins, s.Admins)
		set(&cfg.Discord.Language, s.Language)
		if s.Mode != nil && *s.Mode != "" {
			cfg.Discord.Mode = *s.Mode
		}
		if s.APIURL != nil && *s.APIURL != "" { // "" = the default
			cfg.Discord.APIURL = *s.APIURL
		}
	}
	if s := f.Hooks; s != nil {
		for _, sec := range []struct {
			key  string
			file *fileHookAgent
			to   *HookAgent
		}{
			{"hooks.claude_code", s.ClaudeCode, &cfg.Hooks.ClaudeCode},
			{"hooks.codex", s.Codex, &cfg.Hooks.Codex},
			{"hooks.gemini", s.Gemini, &cfg.Hooks.Gemini},
			{"hooks.cursor", s.Cursor, &cfg.Hooks.Cursor},
			{"hooks.copilot", s.Copilot, &cfg.Hooks.Copilot},
			{"hooks.qwen", s.Qwen, &cfg.Hooks.Qwen},
			{"hooks.opencode", s.OpenCode, &cfg.Hooks.OpenCode},
		} {
			if sec.file == nil {
				continue
			}
			duration(p, sec.key+".wait", sec.file.Wait, &sec.to.Wait)
			set(&sec.to.UnknownTool, sec.file.UnknownTool)
			if sec.file.Tools != nil {
				sec.to.Tools = sec.file.Tools
			}
		}
	}
	decodeMCP(cfg, f.MCP, getenv, p)
	if s := f.Log; s != nil {
		set(&cfg.Log.Format, s.Format)
		set(&cfg.Log.Level, s.Level)
	}
	return nil
}

// set copies a value the file gives over the default; an absent key (nil)
// keeps it.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// filePath expands ~ and reads a relative path from the config file's
// directory, so the file means the same whatever directory the gateway starts in.
func filePath(p, dir string, getenv func(string) string) string {
	p = ExpandHome(p, getenv)
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return p
	}
	return filepath.Join(dir, p)
}

func duration(p *problems, key string, v *string, dst *time.Duration) {
	if v == nil {
		return
	}
	d, err := ParseDuration(*v)
	if err != nil {
		p.wrap(key, err)
		return
	}
	*dst = d
}

// ParseDuration reads a config duration: time.ParseDuration's form ("90s",
// "10m", "2160h", "1h30m") or a whole number of days ("90d" = 2160h). It is
// duration.Parse, which the command line and the API read theirs with too.
func ParseDuration(s string) (time.Duration, error) { return durationpkg.Parse(s) }
