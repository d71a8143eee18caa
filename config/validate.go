package config

import (
	"fmt"
	"github.com/metnos/gateway/internal/callbackurl"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

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
	slackIDRE = regexp.MustCompile(`^[A-Z0-9]+$`)
	// Telegram's secret_token: 1-256 characters, A-Z, a-z, 0-9, _ and -
	// (https://core.telegram.org/bots/api#setwebhook).
	tgSecretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
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
	language(p, "telegram.language", c.Telegram.Language)
	language(p, "slack.language", c.Slack.Language)
	language(p, "discord.language", c.Discord.Language)
	if u := c.Web.PublicURL; u != "" {
		if err := httpURL(u); err != nil {
			p.add("web.public_url", "%q: %v", u, err)
		} else if strings.ContainsAny(u, "?#|<> ") {
			p.add("web.public_url", "%q: want a base URL (scheme, host, optional path), no query or fragment", u)
		}
	}
	c.validateTelegram(p)
	c.validateSlack(p)
	c.validateDiscord(p)
	c.validateHooks(p)
	c.validateMCP(p)
	c.validateLog(p)
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
	enabled := func(d string) bool {
		return d == policy.DeliverTelegram && c.Telegram.Enabled() || d == policy.DeliverSlack && c.Slack.Enabled() ||
			d == policy.DeliverDiscord && c.Discord.Enabled()
	}
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
		if l.Timeout <= 0 || l.Timeout > 5*time.Minute {
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

// The bounds of a request's timeout (SPEC §5); the default must lie within them.
const (
	minTimeout = 10 * time.Second
	maxTimeout = 24 * time.Hour
)

// maxAllowFor bounds approvals.allow_for: every duration is a button.
const maxAllowFor = 4

func (c *Config) validateApprovals(p *problems) {
	if t := c.Approvals.Timeout; t < minTimeout || t > maxTimeout {
		p.add("approvals.timeout", "%v is out of range (want 10s to 24h)", t)
	}
	if _, err := cron.ParseStandard(c.Approvals.PruneSchedule); err != nil {
		p.add("approvals.prune_schedule", "bad cron spec %q: %v", c.Approvals.PruneSchedule, err)
	}
	if d := c.Approvals.Digest; d != "" {
		if _, err := cron.ParseStandard(d); err != nil {
			p.add("approvals.digest", "bad cron spec %q: %v", d, err)
		} else if !c.digestMessenger() {
			p.add("approvals.digest", "no messenger to post the digest on (configure [telegram] or [slack])")
		}
	}
	positive(p, "approvals.retention", c.Approvals.Retention)
	if t := c.Approvals.SessionTTL; t < time.Second || t > c.Policy.GrantTTL {
		p.add("approvals.session_ttl", "%v is out of range (want 1s to policy.grant_ttl, %v)", t, c.Policy.GrantTTL)
	}
	if n := len(c.Approvals.AllowFor); n > maxAllowFor {
		p.add("approvals.allow_for", "%d durations (at most %d: each is a button on every card)", n, maxAllowFor)
	}
	for i, d := range c.Approvals.AllowFor {
		key := fmt.Sprintf("approvals.allow_for[%d]", i)
		switch {
		case d < time.Second:
			p.add(key, "%v is too short (want 1s or more)", d)
		case d > c.Policy.GrantTTL:
			p.add(key, "%v is longer than policy.grant_ttl (%v): use Allow always", d, c.Policy.GrantTTL)
		case slices.Contains(c.Approvals.AllowFor[:i], d):
			p.add(key, "%v is listed twice", d)
		}
	}
	for i, rt := range c.Approvals.Routes {
		c.validateRoute(p, fmt.Sprintf("approvals.routes[%d]", i), rt)
	}
}

// digestMessenger reports whether any configured messenger can post the
// digest.
func (c *Config) digestMessenger() bool { return c.Telegram.Enabled() || c.Slack.Enabled() }

var (
	tgUserRE    = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)
	webLoginRE  = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)
	slackUserRE = regexp.MustCompile(`^[UWS][A-Z0-9]{1,31}$`)
	// A Discord id is a snowflake: a decimal number, 17-20 digits today
	// (https://discord.com/developers/docs/reference#snowflakes).
	snowflakeRE  = regexp.MustCompile(`^[1-9][0-9]{5,19}$`)
	ed25519HexRE = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
)

// validateRoute checks one [[approvals.routes]] entry: every channel it
// names is configured, every approver is "channel:user" on one of them, and
// the quorum can be reached.
func (c *Config) validateRoute(p *problems, key string, rt Route) {
	if _, err := policy.CapabilityPattern(rt.Capability); err != nil {
		p.wrap(key+".capability", err)
	}
	if rt.Agent != "" {
		found := false
		for _, a := range c.Agents {
			found = found || a.ID == rt.Agent
		}
		if !found {
			p.add(key+".agent", "no agent %q in [[agents]]", rt.Agent)
		}
	}
	c.notifyChannels(p, key+".notify", rt.Notify)
	seen := map[string]bool{}
	groups := false
	for j, ap := range rt.Approvers {
		ak := fmt.Sprintf("%s.approvers[%d]", key, j)
		ch, user, ok := strings.Cut(ap, ":")
		if seen[ap] {
			p.add(ak, "%q is listed twice", ap)
			continue
		}
		seen[ap] = true
		switch {
		case !ok || user == "":
			p.add(ak, "%q is not \"channel:user\" (e.g. \"telegram:123456789\", \"slack:U0123456\", \"discord:80351110224678912\", \"web:owner\", \"agent:ops\")", ap)
		case ch == NotifyTelegram:
			if !c.Telegram.Enabled() {
				p.add(ak, "telegram is not configured (set telegram.token_env)")
			} else if !tgUserRE.MatchString(user) {
				p.add(ak, "bad Telegram user id %q (a positive number; /start tells you yours)", user)
			}
		case ch == NotifySlack:
			if !c.Slack.Enabled() {
				p.add(ak, "slack is not configured (set slack.bot_token_env)")
			} else if !slackUserRE.MatchString(user) {
				p.add(ak, "bad Slack id %q (a member ID such as U0123456, or a user group ID such as S0123456)", user)
			}
			groups = groups || strings.HasPrefix(user, "S")
		case ch == NotifyDiscord:
			role, isRole := strings.CutPrefix(user, "role:")
			switch {
			case !c.Discord.Enabled():
				p.add(ak, "discord is not configured (set discord.token_env)")
			case isRole && !snowflakeRE.MatchString(role):
				p.add(ak, "bad Discord role id %q (the role's numeric id, as discord:role:<id>)", role)
			case !isRole && !snowflakeRE.MatchString(user):
				p.add(ak, "bad Discord user id %q (a numeric id; Developer Mode, Copy User ID)", user)
			}
			groups = groups || isRole
		case ch == NotifyWeb:
			if !webLoginRE.MatchString(user) {
				p.add(ak, "bad web login name %q (the web page's login is \"owner\")", user)
			} else if !c.Web.WebUser(user) {
				p.add(ak, "no web user %q in [[web.users]]", user)
			}
		case ch == "agent":
			admin, found := false, false
			for _, a := range c.Agents {
				if a.ID == user {
					found, admin = true, a.Admin
				}
			}
			switch {
			case !found:
				p.add(ak, "no agent %q in [[agents]]", user)
			case !admin:
				p.add(ak, "agent %q is not an admin agent (only admin agents may decide over the API)", user)
			}
		default:
			p.add(ak, "unknown channel %q in %q (want telegram, slack, discord, web or agent)", ch, ap)
		}
	}
	switch {
	case rt.Quorum < 1:
		p.add(key+".quorum", "must be at least 1, got %d", rt.Quorum)
	case len(rt.Approvers) > 0 && !groups && rt.Quorum > len(rt.Approvers):
		p.add(key+".quorum", "%d can never be reached: only %d approvers are listed", rt.Quorum, len(rt.Approvers))
	}
	c.checkStepUp(p, key, rt)
	if rt.EscalateAfter != 0 || len(rt.EscalateTo) > 0 {
		switch {
		case rt.EscalateAfter < MinRouteInterval:
			p.add(key+".escalate_after", "must be at least %v when escalate_to is set, got %v", MinRouteInterval, rt.EscalateAfter)
		case len(rt.EscalateTo) == 0:
			p.add(key+".escalate_to", "required when escalate_after is set (the channels the card also goes to)")
		}
		c.notifyChannels(p, key+".escalate_to", rt.EscalateTo)
	}
	if rt.RemindEvery != 0 && rt.RemindEvery < MinRouteInterval {
		p.add(key+".remind_every", "must be at least %v, got %v", MinRouteInterval, rt.RemindEvery)
	}
}

// notifyChannels checks a list of channels a card goes to: an agent's or a
// route's notify, a route's escalate_to.
func (c *Config) notifyChannels(p *problems, key string, list []string) {
	seen := map[string]bool{}
	for j, n := range list {
		nk := fmt.Sprintf("%s[%d]", key, j)
		switch {
		case n != NotifyWeb && n != NotifyTelegram && n != NotifySlack && n != NotifyDiscord:
			p.add(nk, "unknown channel %q (want web, telegram, slack or discord)", n)
		case seen[n]:
			p.add(nk, "%q is listed twice", n)
		case n == NotifyTelegram && !c.Telegram.Enabled():
			p.add(nk, "telegram is not configured (set telegram.token_env)")
		case n == NotifySlack && !c.Slack.Enabled():
			p.add(nk, "slack is not configured (set slack.bot_token_env)")
		case n == NotifyDiscord && !c.Discord.Enabled():
			p.add(nk, "discord is not configured (set discord.token_env)")
		}
		seen[n] = true
	}
}

func positive(p *problems, key string, d time.Duration) {
	if d <= 0 {
		p.add(key, "must be positive, got %v", d)
	}
}

// With skipTokens (LoadOptions.SkipAgentTokens) a token_env is checked as a
// name only: its variable was not read.
func (c *Config) validateAgents(p *problems, skipTokens bool) {
	ids := map[string]int{}
	tokens := map[string]int{}
	for i := range c.Agents {
		a := &c.Agents[i]
		key := fmt.Sprintf("agents[%d]", i)
		switch {
		case a.ID == "":
			p.add(key+".id", "required")
		case !agentIDRE.MatchString(a.ID):
			p.add(key+".id", "bad id %q (want 1-64 of a-z, 0-9, _, . and -)", a.ID)
		default:
			if j, dup := ids[a.ID]; dup {
				p.add(key+".id", "%q is already agents[%d].id", a.ID, j)
			} else {
				ids[a.ID] = i
			}
		}
		switch {
		case skipTokens && a.TokenEnv != "":
			validEnvName(p, key+".token_env", a.TokenEnv)
		case a.TokenEnv != "" || a.Token == "":
			secret(p, key+".token_env", a.TokenEnv, a.Token, true)
		}
		if a.Token != "" && len(a.Token) < MinTokenLen {
			p.add(key+".token_env", "the token is %d characters; want at least %d (e.g. openssl rand -hex 24)", len(a.Token), MinTokenLen)
		}
		if a.MaxPending < 1 {
			p.add(key+".max_pending", "%d: want at least 1", a.MaxPending)
		}
		if a.MaxStreams < 1 {
			p.add(key+".max_streams", "%d: want at least 1", a.MaxStreams)
		}
		for j, pat := range a.Callbacks {
			if err := callbackurl.CheckPattern(pat); err != nil {
				p.wrap(fmt.Sprintf("%s.callbacks[%d]", key, j), err)
			}
		}
		if a.Token != "" {
			if j, dup := tokens[a.Token]; dup {
				p.add(key+".token_env", "same token as agents[%d]: each agent needs its own", j)
			} else {
				tokens[a.Token] = i
			}
		}
		if a.Autonomy < policy.ReadOnly || a.Autonomy > policy.Full {
			p.add(key+".autonomy", "%w (want ReadOnly, Supervised or Full)", policy.ErrUnknownLevel)
		}
		if a.Channel == "" {
			p.add(key+".channel", "required (the default principal's channel, e.g. \"web\")")
		}
		if a.SenderID == "" {
			p.add(key+".sender_id", "required (the default principal, e.g. \"owner\")")
		}
		c.notifyChannels(p, key+".notify", a.Notify)
		if n, per, err := ParseRate(a.Rate); err != nil {
			p.wrap(key+".rate", err)
		} else {
			a.RateCount, a.RatePer = n, per
		}
		if a.CardsPerMinute < 0 {
			p.add(key+".cards_per_minute", "%d is negative (0 means no bound)", a.CardsPerMinute)
		}
		capList(p, key+".allow_capabilities", a.AllowCapabilities)
		capList(p, key+".deny_capabilities", a.DenyCapabilities)
		for j, pr := range a.Principals {
			if ch, snd, ok := strings.Cut(pr, ":"); !ok || ch == "" || snd == "" {
				p.add(fmt.Sprintf("%s.principals[%d]", key, j), "%q is not \"channel:sender_id\"", pr)
			}
		}
		for j, w := range a.Workspace {
			k := fmt.Sprintf("%s.workspace[%d]", key, j)
			switch {
			case !filepath.IsAbs(w) && w != "~" && !strings.HasPrefix(w, "~/"):
				p.add(k, "%q is not an absolute directory or one under ~/", w)
			case strings.ContainsAny(w, "*?[{\x00"):
				p.add(k, "%q holds a wildcard or a NUL byte: name directories", w)
			case filepath.Clean(w) == "/":
				p.add(k, "%q is the whole file system: leave workspace out instead", w)
			}
		}
	}
}

// ParseRate reads an agent rate, "N/s", "N/m" or "N/h" with N ≥ 1: N
// requests per period per capability, with a burst of N.
func ParseRate(s string) (count int, per time.Duration, err error) {
	m := rateRE.FindStringSubmatch(s)
	if m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil && n >= 1 {
			per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[m[2]]
			return n, per, nil
		}
	}
	return 0, 0, fmt.Errorf("bad rate %q (want N/s, N/m or N/h with N ≥ 1, e.g. \"60/m\")", s)
}

func capList(p *problems, key string, caps []string) {
	for i, name := range caps {
		if _, err := policy.Lookup(name); err != nil {
			p.wrap(fmt.Sprintf("%s[%d]", key, i), err)
		}
	}
}

// secret checks a *_env key and the value it resolved to. It names the
// variable, never the value; a malformed name is not echoed either, since a
// misplaced secret is the likeliest malformed name.
func secret(p *problems, key, envName, value string, required bool) {
	switch {
	case envName == "" && value == "":
		if required {
			p.add(key, "required (the name of an environment variable holding the secret)")
		}
	case envName == "":
	case !validEnvName(p, key, envName):
	case value == "":
		p.add(key, "%s is empty", envName)
	}
}

// validEnvName reports a *_env key whose value is not a variable name.
func validEnvName(p *problems, key, name string) bool {
	if !envNameRE.MatchString(name) {
		p.add(key, "not an environment variable name (want letters, digits and _, e.g. SLACK_BOT_TOKEN; the secret itself belongs in the environment, not in this file)")
		return false
	}
	return true
}

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

func (c *Config) validateHooks(p *problems) {
	for _, sec := range c.Hooks.HookSections() {
		validateHookAgent(p, sec.Key, *sec.Section)
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
	}
}

// checkStepUp checks a route's step_up: with "passkey" only web users can
// allow (on the web page, with their passkey), so a route must let at
// least quorum of them approve.
func (c *Config) checkStepUp(p *problems, key string, rt Route) {
	switch rt.StepUp {
	case "", StepUpNone:
		return
	case StepUpPasskey:
	default:
		p.add(key+".step_up", "unknown value %q (want \"none\" or \"passkey\")", rt.StepUp)
		return
	}
	if len(rt.Approvers) == 0 {
		return // every web user may approve: each channel's own approvers
	}
	web := 0
	for _, ap := range rt.Approvers {
		if ch, user, _ := strings.Cut(ap, ":"); ch == NotifyWeb && c.Web.WebUser(user) {
			web++
		}
	}
	switch {
	case web == 0:
		p.add(key+".step_up", "\"passkey\" needs a web user among the approvers (\"web:<name>\"): only they can sign an allow with a passkey")
	case rt.Quorum > web:
		p.add(key+".step_up", "\"passkey\" with quorum %d needs %d web users among the approvers, only %d listed", rt.Quorum, rt.Quorum, web)
	}
}
