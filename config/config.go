// Package config is the gateway's configuration: one Config, loaded from
// defaults, then a TOML file, then the environment, then checked by Validate.
//
// Two rules shape it. Unknown keys are errors, because a typo in a security
// config must not be silently ignored. Secrets (agent tokens, bot tokens,
// signing secrets, the admin token, a database DSN) come only from the
// environment: the file names the variable (token_env = "…"), never the value,
// and there is no key a value could be written to. Resolved secrets never
// appear in an error message, and Redacted hides them for `config show`.
//
// Every problem names its key (`storage.dsn_env: PG_DSN is empty`,
// `policy.rules[2].action: unknown action "alow" …`), and all problems are
// reported together in one *Error.
//
// Defaults, in SPEC §10 terms:
//
//	server.listen             127.0.0.1:8080
//	storage.driver            sqlite
//	storage.path              StateDir()/gateway.db
//	policy.grant_ttl          2160h (90 days)
//	policy.stale_after        2160h (90 days)
//	vaglio.judge_threshold    0.30
//	vaglio.log_dir            $XDG_DATA_HOME/metnos/vaglio, else ~/.local/share/metnos/vaglio
//	vaglio.judge_kind         rule-based-v1 (llm-v1 asks the model of [vaglio.llm])
//	approvals.timeout         10m
//	approvals.prune_schedule  @hourly
//	approvals.retention       8760h (1 year)
//	telemetry.protocol        http/protobuf (telemetry.otlp_endpoint "" = off)
//	hooks.claude_code.wait    9m (and every other [hooks.NAME] alike)
//	hooks.claude_code.unknown_tool  ask (likewise)
//	log.level                 info (log.format "" = text on a terminal, JSON otherwise)
//	each [[agents]] entry     autonomy Supervised, channel "web", sender_id "owner",
//	                          notify ["web"], rate "60/m", admin false
//
// Durations are strings for time.ParseDuration ("90s", "10m", "2160h"), or a
// whole number of days ("90d").
package config

import (
	"path/filepath"
	"time"

	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// Config is the whole gateway configuration. Secret fields hold values
// resolved from the environment by Load; print Redacted, never Config itself.
type Config struct {
	// File is the config file this was loaded from, or the default path
	// that was looked for ("" when none): one of the gateway's own files.
	File      string    `toml:"-"`
	Server    Server    `toml:"server"`
	Storage   Storage   `toml:"storage"`
	Policy    Policy    `toml:"policy"`
	Vaglio    Vaglio    `toml:"vaglio"`
	Approvals Approvals `toml:"approvals"`
	Agents    []Agent   `toml:"agents"`
	Web       Web       `toml:"web"`
	Hooks     Hooks     `toml:"-"` // [hooks.NAME], decoded by their own view (Hooks.fileView)
	MCP       MCP       `toml:"mcp"`
	Log       Log       `toml:"log"`
	Telemetry Telemetry `toml:"telemetry"`
	// sections are the registered sections' values, in registration
	// order (LoadOptions.Sections, AddSections): among them the
	// messengers (see Messenger).
	sections []namedSection
}

// Server is the [server] table.
type Server struct {
	// Listen is the HTTP address (host:port). --listen and GATEWAY_LISTEN override it.
	Listen string `toml:"listen"`
	// Timezone is the IANA zone every time a person reads is shown in
	// ("Europe/Rome"); "" means the machine's local zone. Machine-readable
	// times stay UTC whatever it says.
	Timezone string `toml:"timezone"`
	// Location is Timezone loaded, set by Validate.
	Location *time.Location `toml:"-"`
}

// Zone is the time zone people read times in: server.timezone, or the
// machine's local zone when it is empty (or was never validated).
func (s Server) Zone() *time.Location {
	if s.Location != nil {
		return s.Location
	}
	if s.Timezone != "" {
		if loc, err := time.LoadLocation(s.Timezone); err == nil {
			return loc
		}
	}
	return time.Local
}

// Storage is the [storage] table.
type Storage struct {
	// Path is the SQLite file, with ~ expanded; a relative path in the file is
	// taken relative to the config file's directory. METNOS_GRANTS_DB overrides it.
	Path string `toml:"path"`
	// Driver is "sqlite" (the default) or "postgres".
	Driver string `toml:"driver"`
	// DSNEnv names the environment variable holding the database DSN
	// (storage.dsn_env). Empty means GATEWAY_DATABASE_URL.
	DSNEnv string `toml:"dsn_env"`
	// DSN is the resolved database URL (secret: it may carry a password).
	// Only the "postgres" driver uses it.
	DSN string `toml:"-"`
}

// Policy is the [policy] table.
type Policy struct {
	// GrantTTL is how long an Allow always grant lives (policy.grant_ttl).
	GrantTTL Duration `toml:"grant_ttl"`
	// StaleAfter revokes grants unused for this long (policy.stale_after).
	StaleAfter Duration `toml:"stale_after"`
	// Rules are the [[policy.rules]], in file order: within an owner the
	// first match wins, so order matters.
	Rules []Rule `toml:"rules"`
	// Notify are the [[policy.notify]] patterns: requests allowed without
	// a person that match one are told to its deliveries.
	Notify []Notify `toml:"notify"`
}

// Notify is one [[policy.notify]] entry: "allowed, but tell me".
type Notify struct {
	// NotifyPattern is what it matches and where it goes (Index unset:
	// see Pattern).
	policy.NotifyPattern
	// WebhookSecretEnv names the variable holding the key of the
	// webhook's X-Gateway-Signature (HMAC-SHA256 of the body), resolved
	// into WebhookSecret.
	WebhookSecretEnv string `toml:"webhook_secret_env"`
	WebhookSecret    string `toml:"-"`
}

// Pattern is the entry as policy matches it; i is its place in the file.
func (n Notify) Pattern(i int) policy.NotifyPattern {
	p := n.NotifyPattern
	p.Index = i
	return p
}

// NotifyPatterns returns the [[policy.notify]] entries as policy patterns.
func (c Config) NotifyPatterns() []policy.NotifyPattern {
	out := make([]policy.NotifyPattern, len(c.Policy.Notify))
	for i, n := range c.Policy.Notify {
		out[i] = n.Pattern(i)
	}
	return out
}

// The rule actions, from least to most restrictive.
const (
	ActionApprove         = "approve"
	ActionRequireApproval = "require_approval"
	ActionBlock           = "block"
)

// Rule is one [[policy.rules]] entry (SPEC §4 step 4). Capability is an exact
// registry name, "*", or "prefix:*"; Target is a glob read per the
// capability's target_kind and is required ("*" for any). A rule with any of
// SenderID, Agent or Channel set is scoped (owner "user"); one without is
// owner "org".
type Rule struct {
	Capability string `toml:"capability"`
	Target     string `toml:"target"`
	Action     string `toml:"action"`
	SenderID   string `toml:"sender_id"`
	Agent      string `toml:"agent"`
	Channel    string `toml:"channel"`
}

// Scoped reports whether the rule names a sender, agent or channel, which
// makes it a rule of the owner "user" rather than "org".
func (r Rule) Scoped() bool { return r.SenderID != "" || r.Agent != "" || r.Channel != "" }

// Vaglio is the [vaglio] table.
type Vaglio struct {
	// JudgeThreshold: a judge score below it denies (0..1). METNOS_JUDGE_THRESHOLD overrides it.
	JudgeThreshold float64 `toml:"judge_threshold"`
	// LogDir receives the monthly JSONL decision logs, with ~ expanded.
	LogDir string `toml:"log_dir"`
	// JudgeKind is JudgeRuleBased (the default) or JudgeLLM, the opt-in
	// LLM judge of [vaglio.llm]. METNOS_JUDGE_KIND overrides it.
	JudgeKind string `toml:"judge_kind"`
	// LLM is the [vaglio.llm] table, read when JudgeKind is JudgeLLM.
	LLM VaglioLLM `toml:"llm"`
}

// The values of vaglio.judge_kind (the vaglio seed's names).
const (
	JudgeRuleBased = "rule-based-v1"
	JudgeLLM       = "llm-v1"
)

// The values of vaglio.llm.api.
const (
	LLMAPIOpenAI    = "openai"    // any chat-completions server: Ollama, vLLM, llama.cpp, OpenAI
	LLMAPIAnthropic = "anthropic" // the Messages API
)

// The values of vaglio.llm.on_failure.
const (
	LLMOnFailureAsk       = "ask"
	LLMOnFailureRuleBased = "rule-based"
)

// VaglioLLM is the [vaglio.llm] table: the model the LLM judge asks.
type VaglioLLM struct {
	API   string `toml:"api"` // LLMAPIOpenAI or LLMAPIAnthropic
	URL   string `toml:"url"` // the API's base, e.g. http://127.0.0.1:11434/v1
	Model string `toml:"model"`
	// APIKeyEnv names the variable holding the key, if the server needs
	// one; APIKey is its value, never read from the file.
	APIKeyEnv string `toml:"api_key_env"`
	APIKey    string `toml:"-"`
	// Timeout bounds one call; a slower model leaves the decision to the
	// rule-based judge.
	Timeout Duration `toml:"timeout"`
	// MaxCallsPerDay is each agent's budget of model calls (UTC day, per
	// gateway process); beyond it the model does not score that agent's
	// requests (see OnFailure). 0 means no limit.
	MaxCallsPerDay int `toml:"max_calls_per_day"`
	// MaxCallsPerDayTotal bounds all agents' calls together (UTC day, per
	// process). 0 (the default) means no total bound.
	MaxCallsPerDayTotal int `toml:"max_calls_per_day_total"`
	// OnFailure is what happens when the model did not score a request
	// (over budget, slow, an HTTP error, an answer that is not the strict
	// JSON): LLMOnFailureAsk (the default) sends a request that would
	// have been allowed to a person; LLMOnFailureRuleBased lets the
	// rule-based judge decide alone.
	OnFailure string `toml:"on_failure"`
	// SendArgValues lets the model see argument values; by default it
	// sees only their keys.
	SendArgValues bool `toml:"send_arg_values"`
}

// Approvals is the [approvals] table.
type Approvals struct {
	// Timeout is the default request timeout; requests clamp theirs to 10s…24h,
	// so this must lie in that range too.
	Timeout Duration `toml:"timeout"`
	// PruneSchedule is a robfig/cron standard spec ("@hourly", "0 * * * *").
	PruneSchedule string `toml:"prune_schedule"`
	// Retention is how long finished requests and dead grants are kept.
	Retention Duration `toml:"retention"`
	// AllowFor are the "Allow for …" buttons (approvals.allow_for): each
	// writes a grant on the request's default scope that ends this long
	// after the decision. Empty hides them. Only capabilities whose default
	// approval is per_target get them, never code:exec or mail:send.
	AllowFor []Duration `toml:"allow_for"`
	// SessionTTL is how long an "Allow this session" grant lives at most
	// (approvals.session_ttl): it matches only requests with the same
	// agent and session id, and ends after this even if the session goes on.
	SessionTTL Duration `toml:"session_ttl"`
	// Digest, when set, is a robfig/cron standard spec read in the server's
	// time zone (server.timezone): at each tick every messenger that can
	// gets one message with the last 24 hours' asks,
	// allows, denies and expiries and the top three suggested rules. Empty
	// (the default): no digest.
	Digest string `toml:"digest"`
	// Routes are the [[approvals.routes]], in file order: the first that
	// matches a request decides where its card goes, who may decide it and
	// how many must allow. No match: the agent's notify and each channel's
	// own approvers, quorum 1.
	Routes []Route `toml:"routes"`
}

// Route is one [[approvals.routes]] entry. Capability is an exact registry
// name, "*" or "prefix:*", as in [[policy.rules]]; Agent and Critical
// narrow it further when set.
type Route struct {
	Capability string `toml:"capability"`
	Agent      string `toml:"agent"`
	// Critical, when set, matches only critical (true) or only
	// non-critical (false) capabilities.
	Critical *bool `toml:"critical"`
	// Notify replaces the agent's notify for matching requests ("web" or
	// a registered messenger's name).
	Notify []string `toml:"notify"`
	// Approvers are who may decide, as "channel:user": "web:<login
	// name>", "agent:<admin agent id>", or a registered messenger's name
	// and a user as it reads one (Messenger.CheckApprover). Empty: each
	// channel's own approvers.
	Approvers []string `toml:"approvers"`
	// Quorum is how many distinct approvers must allow (at least 1).
	Quorum int `toml:"quorum"`
	// EscalateAfter, when set, posts the card also to EscalateTo once the
	// request has been pending this long.
	EscalateAfter Duration `toml:"escalate_after"`
	EscalateTo    []string `toml:"escalate_to"`
	// RemindEvery, when set, sends a short reminder in reply to each card
	// this often while the request is pending.
	RemindEvery Duration `toml:"remind_every"`
	// StepUp is what an allow needs besides a tap: StepUpNone, or
	// StepUpPasskey (each allow signed on the web page with the approver's
	// passkey, over the request and the decision).
	StepUp string `toml:"step_up"`
}

// The values of a route's step_up.
const (
	StepUpNone    = "none"
	StepUpPasskey = "passkey"
)

// MinRouteInterval is the shortest escalate_after and remind_every.
const MinRouteInterval = time.Second

// PolicyRules returns the [[policy.rules]] as policy rules, in file order.
func (c Config) PolicyRules() []policy.Rule {
	out := make([]policy.Rule, len(c.Policy.Rules))
	for i, r := range c.Policy.Rules {
		out[i] = policy.Rule{Index: i, Capability: r.Capability, Target: r.Target, Action: policy.Action(r.Action),
			SenderID: r.SenderID, Agent: r.Agent, Channel: r.Channel}
	}
	return out
}

// Log is the optional [log] table.
type Log struct {
	// Format is "text", "json", or "" to choose by whether stderr is a terminal.
	Format string `toml:"format"`
	// Level is "debug", "info", "warn" or "error".
	Level string `toml:"level"`
}

// Default returns the SPEC defaults, with paths from the process environment,
// and no agents.
func Default() Config { return defaults(nil) }

func defaults(getenv func(string) string) Config {
	getenv = orEnv(getenv)
	return Config{
		Server:  Server{Listen: "127.0.0.1:8080"},
		Storage: Storage{Path: filepath.Join(StateDir(getenv), "gateway.db"), Driver: "sqlite"},
		Policy:  Policy{GrantTTL: Duration(2160 * time.Hour), StaleAfter: Duration(2160 * time.Hour)},
		Vaglio: Vaglio{
			JudgeKind: JudgeRuleBased,
			LLM: VaglioLLM{API: LLMAPIOpenAI, URL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b",
				Timeout: Duration(5 * time.Second), MaxCallsPerDay: 5000, OnFailure: LLMOnFailureAsk},
			JudgeThreshold: 0.30,
			LogDir:         filepath.Join(xdgDir(getenv, "XDG_DATA_HOME", ".local/share"), "metnos", "vaglio"),
		},
		Approvals: Approvals{Timeout: Duration(10 * time.Minute), PruneSchedule: "@hourly", Retention: Duration(8760 * time.Hour),
			AllowFor: []Duration{Duration(time.Hour)}, SessionTTL: Duration(12 * time.Hour)},
		Web:       Web{Language: string(locale.DefaultLang), Users: []WebUser{{Name: DefaultWebUser}}},
		Hooks:     defaultHooks(),
		Log:       Log{Level: "info"},
		Telemetry: Telemetry{Protocol: TelemetryHTTP},
	}
}

func orEnv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return osGetenv
	}
	return getenv
}

// Guard is the guard of the route numbered number (1-based, in file
// order): nil unless its quorum is above 1 or it has a step-up. See
// policy.Guard.
func (r Route) Guard(number int) *policy.Guard {
	step := r.StepUp
	if step == StepUpNone {
		step = ""
	}
	return policy.GuardOf(policy.RouteSpec{Number: number, Capability: r.Capability, Agent: r.Agent,
		Critical: r.Critical, Approvers: r.Approvers, Quorum: r.Quorum, StepUp: step})
}
