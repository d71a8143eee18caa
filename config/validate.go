package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// Validate checks the whole configuration and reports every problem in one
// *Error, each naming its key. Load calls it; call it again after changing a
// Config by hand. It also fills the derived fields Agent.RateCount and
// Agent.RatePer from Agent.Rate.
//
// Secrets are checked as resolved values: a *_env key whose variable is empty
// is an error naming the variable, never showing a value. An agent built in
// code (the generated local agent) may carry Token with no TokenEnv.
func (c *Config) Validate() error {
	var p problems
	c.validate(&p, LoadOptions{})
	if len(p) > 0 {
		return &Error{Problems: p}
	}
	return nil
}

var (
	agentIDRE = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	rateRE    = regexp.MustCompile(`^([0-9]+)/([smh])$`)
)

func (c *Config) validate(p *problems, opt LoadOptions) {
	c.validateServer(p)
	c.validateStorage(p)
	c.validatePolicy(p)
	c.validateVaglio(p)
	c.validateApprovals(p)
	c.validateAgents(p, opt.SkipAgentTokens)
	secret(p, "web.admin_token_env", c.Web.AdminTokenEnv, c.Web.AdminToken, false)
	if t := c.Web.AdminToken; t != "" && len(t) < MinTokenLen {
		p.add("web.admin_token_env", "the token is %d characters; want at least %d (e.g. openssl rand -hex 24)", len(t), MinTokenLen)
	}
	c.validateWebUsers(p)
	language(p, "web.language", c.Web.Language)
	if u := c.Web.PublicURL; u != "" {
		if err := httpURL(u); err != nil {
			p.add("web.public_url", "%q: %v", u, err)
		} else if strings.ContainsAny(u, "?#|<> ") {
			p.add("web.public_url", "%q: want a base URL (scheme, host, optional path), no query or fragment", u)
		}
	}
	for _, s := range c.sections {
		s.value.Validate(Problems{section: s.name, p: p}, c)
	}
	c.validateHooks(p)
	c.validateMCP(p)
	c.validateLog(p)
	c.validateTelemetry(p)
}

func (c *Config) validateServer(p *problems) {
	host, port, err := net.SplitHostPort(c.Server.Listen)
	if err != nil {
		p.add("server.listen", "bad address %q (want host:port, e.g. 127.0.0.1:8080)", c.Server.Listen)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		p.add("server.listen", "bad port %q in %q", port, c.Server.Listen)
	}
	if strings.ContainsAny(host, " \t/") {
		p.add("server.listen", "bad host %q in %q", host, c.Server.Listen)
	}
	c.Server.Location = nil
	if tz := c.Server.Timezone; tz != "" {
		// LoadLocation also takes "Local" and "UTC"; a file path would let
		// it read any file, so names are checked first.
		if loc, err := time.LoadLocation(tz); err != nil || !tzNameRE.MatchString(tz) {
			p.add("server.timezone", "unknown time zone %q (want an IANA name such as \"Europe/Rome\", or \"\" for the machine's zone)", tz)
		} else {
			c.Server.Location = loc
		}
	}
}

// tzNameRE is the shape of an IANA zone name ("Europe/Rome", "UTC",
// "America/Argentina/Buenos_Aires", "Etc/GMT+1").
var tzNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$`)

// language checks a surface's language key against the catalogs.
func language(p *problems, key, v string) {
	if _, err := locale.ParseLang(v); err != nil {
		p.wrap(key, err)
	}
}

func (c *Config) validateStorage(p *problems) {
	switch c.Storage.Driver {
	case "sqlite":
		localPath(p, "storage.path", c.Storage.Path)
	case "postgres":
		if c.Storage.DSNEnv == "" && c.Storage.DSN == "" {
			p.add("storage.dsn_env", "required when storage.driver is \"postgres\" (or set %s)", EnvDatabaseURL)
		}
	default:
		p.add("storage.driver", "unknown driver %q (want sqlite or postgres)", c.Storage.Driver)
	}
	secret(p, "storage.dsn_env", c.Storage.DSNEnv, c.Storage.DSN, false)
}

// localPath refuses an empty path and one whose ~ could not be expanded.
func localPath(p *problems, key, v string) {
	switch {
	case v == "":
		p.add(key, "required")
	case strings.HasPrefix(v, "~"):
		p.add(key, "cannot expand %q: HOME is not set (or use an absolute path)", v)
	case strings.ContainsRune(v, 0):
		p.add(key, "contains a NUL byte")
	}
}

func (c *Config) validatePolicy(p *problems) {
	positive(p, "policy.grant_ttl", c.Policy.GrantTTL)
	positive(p, "policy.stale_after", c.Policy.StaleAfter)
	agents := map[string]bool{}
	for _, a := range c.Agents {
		agents[a.ID] = true
	}
	for i, r := range c.Policy.Rules {
		key := fmt.Sprintf("policy.rules[%d]", i)
		pr := policy.Rule{Capability: r.Capability, Target: r.Target, Action: policy.Action(r.Action),
			SenderID: r.SenderID, Agent: r.Agent, Channel: r.Channel}
		for _, fe := range policy.CheckRule(pr, func(id string) bool { return agents[id] }) {
			p.wrap(key+"."+fe.Field, fe.Err)
		}
	}
	enabled := c.enabledMessengers()
	for i, n := range c.Policy.Notify {
		key := fmt.Sprintf("policy.notify[%d]", i)
		for _, fe := range policy.CheckNotify(n.Pattern(i), func(id string) bool { return agents[id] }, enabled) {
			p.wrap(key+"."+fe.Field, fe.Err)
		}
		hook := slices.Contains(n.Deliveries, policy.DeliverWebhook)
		if !hook && n.WebhookSecretEnv != "" {
			p.add(key+".webhook_secret_env", "set, but deliveries has no \"webhook\"")
		}
		// The webhook's body is signed: a receiver must be able to tell it
		// from a forgery, so the key is required.
		secret(p, key+".webhook_secret_env", n.WebhookSecretEnv, n.WebhookSecret, hook)
	}
}

func (c *Config) validateVaglio(p *problems) {
	if t := c.Vaglio.JudgeThreshold; !(t >= 0 && t <= 1) {
		p.add("vaglio.judge_threshold", "%v is out of range (want 0 to 1)", t)
	}
	localPath(p, "vaglio.log_dir", c.Vaglio.LogDir)
	switch c.Vaglio.JudgeKind {
	case JudgeRuleBased:
	case JudgeLLM:
		// [vaglio.llm] matters only when the LLM judge is on.
		l := &c.Vaglio.LLM
		if l.API != LLMAPIOpenAI && l.API != LLMAPIAnthropic {
			p.add("vaglio.llm.api", "unknown API %q (want %s or %s)", l.API, LLMAPIOpenAI, LLMAPIAnthropic)
		}
		if u, err := url.Parse(l.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			p.add("vaglio.llm.url", "want an http(s) base URL such as http://127.0.0.1:11434/v1, got %q", l.URL)
		}
		if strings.TrimSpace(l.Model) == "" {
			p.add("vaglio.llm.model", "required when vaglio.judge_kind is %s", JudgeLLM)
		}
		if l.Timeout <= 0 || time.Duration(l.Timeout) > 5*time.Minute {
			p.add("vaglio.llm.timeout", "%s is out of range (want more than 0, at most 5m)", l.Timeout)
		}
		if l.MaxCallsPerDay < 0 {
			p.add("vaglio.llm.max_calls_per_day", "%d is negative (0 means no limit)", l.MaxCallsPerDay)
		}
		if l.MaxCallsPerDayTotal < 0 {
			p.add("vaglio.llm.max_calls_per_day_total", "%d is negative (0 means no total bound)", l.MaxCallsPerDayTotal)
		}
		if l.OnFailure != LLMOnFailureAsk && l.OnFailure != LLMOnFailureRuleBased {
			p.add("vaglio.llm.on_failure", "unknown value %q (want %s or %s)", l.OnFailure, LLMOnFailureAsk, LLMOnFailureRuleBased)
		}
		secret(p, "vaglio.llm.api_key_env", l.APIKeyEnv, l.APIKey, false)
	default:
		p.add("vaglio.judge_kind", "unknown judge %q (want %s or %s)", c.Vaglio.JudgeKind, JudgeRuleBased, JudgeLLM)
	}
}

var webLoginRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

func positive(p *problems, key string, d Duration) {
	if d <= 0 {
		p.add(key, "must be positive, got %v", d)
	}
}

func (c *Config) validateHooks(p *problems) {
	for _, ad := range hooks.Adapters() {
		if sec := c.Hooks[ad.Name]; sec == nil {
			p.add(ad.Section, "missing (config.Default has one for every agent)")
		} else {
			validateHookAgent(p, ad.Section, *sec)
		}
	}
	names := slices.Sorted(maps.Keys(c.Hooks))
	for _, name := range names {
		if _, ok := hooks.AdapterNamed(name); !ok {
			p.add("hooks", "a section for %q, which is no agent the gateway answers hooks of", name)
		}
	}
}

// validateHookAgent checks one [hooks.*] section; every agent's has the
// same rules.
func validateHookAgent(p *problems, section string, cc HookAgent) {
	positive(p, section+".wait", cc.Wait)
	switch cc.UnknownTool {
	case "ask", "deny":
	default:
		p.add(section+".unknown_tool", "unknown answer %q (want ask or deny)", cc.UnknownTool)
	}
	tools := make([]string, 0, len(cc.Tools))
	for k := range cc.Tools {
		tools = append(tools, k)
	}
	sort.Strings(tools)
	for _, tool := range tools {
		key := joinKey(section+".tools", tool)
		if strings.TrimSpace(tool) == "" {
			p.add(key, "empty tool name")
		}
		if _, err := policy.Lookup(cc.Tools[tool]); err != nil {
			p.wrap(key, err)
		}
	}
}

func (c *Config) validateLog(p *problems) {
	switch c.Log.Format {
	case "", "text", "json":
	default:
		p.add("log.format", "unknown format %q (want text or json, or leave it out)", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		p.add("log.level", "unknown level %q (want debug, info, warn or error)", c.Log.Level)
	}
}
