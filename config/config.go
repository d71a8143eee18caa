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
// Every problem names its key (`slack.signing_secret_env: SLACK_SIGNING_SECRET
// is empty`, `policy.rules[2].action: unknown action "alow" …`), and all
// problems are reported together in one *Error.
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
//	telegram.api_endpoint     https://api.telegram.org/bot%s/%s
//	slack.api_url             https://slack.com/api/
//	discord.api_url           https://discord.com/api/v10 (discord.mode "gateway")
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
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
)

// Config is the whole gateway configuration. Secret fields hold values
// resolved from the environment by Load; print Redacted, never Config itself.
type Config struct {
	// File is the config file this was loaded from, or the default path
	// that was looked for ("" when none): one of the gateway's own files.
	File      string
	Server    Server
	Storage   Storage
	Policy    Policy
	Vaglio    Vaglio
	Approvals Approvals
	Agents    []Agent
	Web       Web
	Telegram  Telegram
	Slack     Slack
	Discord   Discord
	Hooks     Hooks
	MCP       MCP
	Log       Log
}

// Server is the [server] table.
type Server struct {
	// Listen is the HTTP address (host:port). --listen and GATEWAY_LISTEN override it.
	Listen string
	// Timezone is the IANA zone every time a person reads is shown in
	// ("Europe/Rome"); "" means the machine's local zone. Machine-readable
	// times stay UTC whatever it says.
	Timezone string
	// Location is Timezone loaded, set by Validate.
	Location *time.Location
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
	Path string
	// Driver is "sqlite" (the default) or "postgres".
	Driver string
	// DSNEnv names the environment variable holding the database DSN
	// (storage.dsn_env). Empty means GATEWAY_DATABASE_URL.
	DSNEnv string
	// DSN is the resolved database URL (secret: it may carry a password).
	// Only the "postgres" driver uses it.
	DSN string
}

// Policy is the [policy] table.
type Policy struct {
	// GrantTTL is how long an Allow always grant lives (policy.grant_ttl).
	GrantTTL time.Duration
	// StaleAfter revokes grants unused for this long (policy.stale_after).
	StaleAfter time.Duration
	// Rules are the [[policy.rules]], in file order: within an owner the
	// first match wins, so order matters.
	Rules []Rule
	// Notify are the [[policy.notify]] patterns: requests allowed without
	// a person that match one are told to its deliveries.
	Notify []Notify
}

// Notify is one [[policy.notify]] entry: "allowed, but tell me".
type Notify struct {
	// NotifyPattern is what it matches and where it goes (Index unset:
	// see Pattern).
	policy.NotifyPattern
	// WebhookSecretEnv names the variable holding the key of the
	// webhook's X-Gateway-Signature (HMAC-SHA256 of the body), resolved
	// into WebhookSecret.
	WebhookSecretEnv string
	WebhookSecret    string
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
	JudgeThreshold float64
	// LogDir receives the monthly JSONL decision logs, with ~ expanded.
	LogDir string
	// JudgeKind is JudgeRuleBased (the default) or JudgeLLM, the opt-in
	// LLM judge of [vaglio.llm]. METNOS_JUDGE_KIND overrides it.
	JudgeKind string
	// LLM is the [vaglio.llm] table, read when JudgeKind is JudgeLLM.
	LLM VaglioLLM
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
	API   string // LLMAPIOpenAI or LLMAPIAnthropic
	URL   string // the API's base, e.g. http://127.0.0.1:11434/v1
	Model string
	// APIKeyEnv names the variable holding the key, if the server needs
	// one; APIKey is its value, never read from the file.
	APIKeyEnv string
	APIKey    string
	// Timeout bounds one call; a slower model leaves the decision to the
	// rule-based judge.
	Timeout time.Duration
	// MaxCallsPerDay is each agent's budget of model calls (UTC day, per
	// gateway process); beyond it the model does not score that agent's
	// requests (see OnFailure). 0 means no limit.
	MaxCallsPerDay int
	// MaxCallsPerDayTotal bounds all agents' calls together (UTC day, per
	// process). 0 (the default) means no total bound.
	MaxCallsPerDayTotal int
	// OnFailure is what happens when the model did not score a request
	// (over budget, slow, an HTTP error, an answer that is not the strict
	// JSON): LLMOnFailureAsk (the default) sends a request that would
	// have been allowed to a person; LLMOnFailureRuleBased lets the
	// rule-based judge decide alone.
	OnFailure string
	// SendArgValues lets the model see argument values; by default it
	// sees only their keys.
	SendArgValues bool
}

// Approvals is the [approvals] table.
type Approvals struct {
	// Timeout is the default request timeout; requests clamp theirs to 10s…24h,
	// so this must lie in that range too.
	Timeout time.Duration
	// PruneSchedule is a robfig/cron standard spec ("@hourly", "0 * * * *").
	PruneSchedule string
	// Retention is how long finished requests and dead grants are kept.
	Retention time.Duration
	// AllowFor are the "Allow for …" buttons (approvals.allow_for): each
	// writes a grant on the request's default scope that ends this long
	// after the decision. Empty hides them. Only capabilities whose default
	// approval is per_target get them, never code:exec or mail:send.
	AllowFor []time.Duration
	// SessionTTL is how long an "Allow this session" grant lives at most
	// (approvals.session_ttl): it matches only requests with the same
	// agent and session id, and ends after this even if the session goes on.
	SessionTTL time.Duration
	// Digest, when set, is a robfig/cron standard spec read in the server's
	// time zone (server.timezone): at each tick every messenger that can
	// (Telegram, Slack) gets one message with the last 24 hours' asks,
	// allows, denies and expiries and the top three suggested rules. Empty
	// (the default): no digest.
	Digest string
	// Routes are the [[approvals.routes]], in file order: the first that
	// matches a request decides where its card goes, who may decide it and
	// how many must allow. No match: the agent's notify and each channel's
	// own approvers, quorum 1.
	Routes []Route
}

// Route is one [[approvals.routes]] entry. Capability is an exact registry
// name, "*" or "prefix:*", as in [[policy.rules]]; Agent and Critical
// narrow it further when set.
type Route struct {
	Capability string
	Agent      string
	// Critical, when set, matches only critical (true) or only
	// non-critical (false) capabilities.
	Critical *bool
	// Notify replaces the agent's notify for matching requests ("web",
	// "telegram", "slack", "discord").
	Notify []string
	// Approvers are who may decide, as "channel:user": "telegram:<user id>",
	// "slack:<member id>" or "slack:<user group id>" (S…), "discord:<user
	// id>" or "discord:role:<role id>", "web:<login name>", "agent:<admin
	// agent id>". Empty: each channel's own approvers.
	Approvers []string
	// Quorum is how many distinct approvers must allow (at least 1).
	Quorum int
	// EscalateAfter, when set, posts the card also to EscalateTo once the
	// request has been pending this long.
	EscalateAfter time.Duration
	EscalateTo    []string
	// RemindEvery, when set, sends a short reminder in reply to each card
	// this often while the request is pending.
	RemindEvery time.Duration
	// StepUp is what an allow needs besides a tap: StepUpNone, or
	// StepUpPasskey (each allow signed on the web page with the approver's
	// passkey, over the request and the decision).
	StepUp string
}

// The values of a route's step_up.
const (
	StepUpNone    = "none"
	StepUpPasskey = "passkey"
)

// MinRouteInterval is the shortest escalate_after and remind_every.
const MinRouteInterval = time.Second

// Agent is one [[agents]] entry: who may call the API and with what ceiling.
type Agent struct {
	// ID names the agent in rules, logs and cards: [a-z0-9_.-], unique.
	ID string
	// TokenEnv names the environment variable holding the agent's bearer token.
	TokenEnv string
	// Token is the resolved bearer token (secret). It also keys the HMAC of callbacks.
	Token string
	// Autonomy is the ceiling: a request may lower it, never raise it.
	Autonomy policy.Level
	// Channel and SenderID are the default principal for the agent's requests.
	Channel  string
	SenderID string
	// Notify lists where cards go: "web", "telegram", "slack". The web page
	// always lists pending requests whatever this says.
	Notify []string
	// Rate is the per-capability token bucket, "N/s", "N/m" or "N/h".
	// Validate parses it into RateCount (also the burst) per RatePer.
	Rate      string
	RateCount int
	RatePer   time.Duration
	// CardsPerMinute bounds the new cards the agent's requests put on each
	// messenger in any 60 s (DefaultCardsPerMinute; 0 = no bound). Beyond
	// it requests still wait, and the messenger says how many more there
	// are, once a minute, with a link to the web page.
	CardsPerMinute int
	// Admin agents may decide requests and manage grants through the API.
	Admin bool
	// AllowCapabilities, when not empty, is the only capabilities the agent may
	// use; DenyCapabilities are never allowed. Exact registry names only.
	AllowCapabilities []string
	DenyCapabilities  []string
	// Mode is "ask" (a person is asked: the default) or "restrict" (what a
	// person would be asked about is denied at once).
	Mode policy.Mode
	// Principals lists, as "channel:sender_id", the people besides its
	// default principal that a non-admin agent may act for (and so use the
	// grants of). Admin agents may name any principal.
	Principals []string
	// Callbacks are the URL patterns a request's callback_url must match
	// (agents[].callbacks): "*" matches any run of characters but "/".
	// Empty: the agent may not ask for callbacks at all.
	Callbacks []string
	// MaxPending caps the agent's requests pending at once
	// (agents[].max_pending, default DefaultMaxPending).
	MaxPending int
	// MaxStreams caps the agent's open waits at once: SSE streams
	// (GET /v1/events) and long-polls (?wait=), each of which holds a
	// connection for minutes (agents[].max_streams, default
	// DefaultMaxStreams). Past it: 429 too_many_streams.
	MaxStreams int
	// Workspace lists the directories the agent works in (absolute, or
	// under "~/"). When set, fs:* requests outside them ask a person at
	// every level (approval_required where the table would allow).
	Workspace []string
}

// DefaultMaxStreams is agents[].max_streams when the file does not say.
const DefaultMaxStreams = 32

// DefaultMaxPending is agents[].max_pending when the file does not say.
const DefaultMaxPending = 100

// MinTokenLen is the shortest agent or admin token config check accepts:
// a token is a password that agents and scripts hold, not one a person
// types, and the generated ones are 51 characters.
const MinTokenLen = 24

// Profile is the agent's restrictive profile for policy decisions.
func (a Agent) Profile() policy.Profile {
	return policy.Profile{Agent: a.ID, Ceiling: a.Autonomy, Allow: a.AllowCapabilities, Deny: a.DenyCapabilities,
		Mode: a.Mode, Workspace: a.Workspace}
}

// PolicyRules returns the [[policy.rules]] as policy rules, in file order.
func (c Config) PolicyRules() []policy.Rule {
	out := make([]policy.Rule, len(c.Policy.Rules))
	for i, r := range c.Policy.Rules {
		out[i] = policy.Rule{Index: i, Capability: r.Capability, Target: r.Target, Action: policy.Action(r.Action),
			SenderID: r.SenderID, Agent: r.Agent, Channel: r.Channel}
	}
	return out
}

// HasAgent reports whether an [[agents]] entry has the id (a rule's agent
// scope must name one).
func (c Config) HasAgent(id string) bool {
	for _, a := range c.Agents {
		if a.ID == id {
			return true
		}
	}
	return false
}

// MayActFor reports whether the agent may make requests on behalf of the
// principal (channel, sender): its default one, one listed in principals,
// or any for an admin agent.
func (a Agent) MayActFor(channel, sender string) bool {
	if a.Admin || channel == a.Channel && sender == a.SenderID {
		return true
	}
	for _, p := range a.Principals {
		if p == channel+":"+sender {
			return true
		}
	}
	return false
}

// NewAgent returns an agent with the documented defaults: Supervised,
// principal web/owner, cards on the web page only, 60 requests a minute per
// capability. Load starts every [[agents]] entry from it; main uses it for the
// generated local agent.
func NewAgent(id string) Agent {
	return Agent{
		ID:         id,
		Autonomy:   policy.Supervised,
		Channel:    "web",
		SenderID:   "owner",
		Notify:     []string{NotifyWeb},
		Mode:       policy.ModeAsk,
		Rate:       "60/m",
		RateCount:  60,
		RatePer:    time.Minute,
		MaxPending: DefaultMaxPending,
		MaxStreams: DefaultMaxStreams,

		CardsPerMinute: DefaultCardsPerMinute,
	}
}

// DefaultCardsPerMinute is [[agents]] cards_per_minute's default.
const DefaultCardsPerMinute = 30

// Permits reports whether the agent's profile lets it use the capability at
// all: not denied, and allowed when an allow list is set. It says nothing
// about the table, rules or grants.
func (a Agent) Permits(capability string) bool {
	for _, c := range a.DenyCapabilities {
		if c == capability {
			return false
		}
	}
	if len(a.AllowCapabilities) == 0 {
		return true
	}
	for _, c := range a.AllowCapabilities {
		if c == capability {
			return true
		}
	}
	return false
}

// LogValue keeps the token out of logs when an Agent is logged with slog.
func (a Agent) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("id", a.ID),
		slog.String("autonomy", a.Autonomy.String()),
		slog.String("channel", a.Channel),
		slog.String("sender_id", a.SenderID),
		slog.Bool("admin", a.Admin),
	)
}

// The places an agent's cards can go (agents[].notify).
const (
	NotifyWeb      = "web"
	NotifyTelegram = "telegram"
	NotifySlack    = "slack"
	NotifyDiscord  = "discord"
)

// Web is the [web] table. The web page is always on; every visit needs a
// session, started by a one-time login link (or the admin token).
type Web struct {
	// AdminTokenEnv names the variable holding the login token that lets
	// non-loopback clients in. Empty: non-loopback clients are refused.
	AdminTokenEnv string
	// AdminToken is the resolved login token (secret).
	AdminToken string
	// Language of the web page: "en" (the default) or "it".
	Language string
	// PublicURL is the address people reach the web page at
	// (web.public_url, e.g. "https://gateway.example.com"). Cards link
	// there to a request's own page, /r/{id}, where every field is shown
	// whole; empty means cards name the path only.
	PublicURL string
	// Users are the people who log in to the web page ([[web.users]]),
	// each by a one-time link from `gateway login --user NAME`; a decision
	// taken there is "web:<name>". Default: one user, "owner".
	Users []WebUser
}

// WebUser is one [[web.users]] entry.
type WebUser struct {
	Name string
}

// DefaultWebUser is the web user of a config that names none.
const DefaultWebUser = "owner"

// WebUser reports whether name is a configured web user.
func (w Web) WebUser(name string) bool {
	for _, u := range w.Users {
		if u.Name == name {
			return true
		}
	}
	return false
}

// Telegram is the [telegram] table. It is enabled by setting token_env.
type Telegram struct {
	// TokenEnv names the variable holding the bot token.
	TokenEnv string
	// Token is the resolved bot token (secret).
	Token string
	// ChatID is where cards are posted (negative for groups).
	ChatID int64
	// Approvers are the Telegram user ids allowed to decide.
	Approvers []int64
	// APIEndpoint is the Bot API URL format, "https://api.telegram.org/bot%s/%s"
	// by default (token, method), as tgbotapi.NewBotAPIWithAPIEndpoint takes it.
	APIEndpoint string
	// WebhookURL switches from long polling to webhook mode when set.
	WebhookURL string
	// WebhookSecretEnv names the variable holding the secret Telegram echoes in
	// X-Telegram-Bot-Api-Secret-Token. Required with WebhookURL.
	WebhookSecretEnv string
	// WebhookSecret is the resolved webhook secret (secret).
	WebhookSecret string
	// Language of cards, buttons, alerts and command answers: "en" (the
	// default) or "it".
	Language string
}

// Enabled reports whether a bot token is configured.
func (t Telegram) Enabled() bool { return t.TokenEnv != "" || t.Token != "" }

// Slack is the [slack] table. It is enabled by setting bot_token_env.
type Slack struct {
	// BotTokenEnv names the variable holding the bot token (xoxb-…).
	BotTokenEnv string
	// BotToken is the resolved bot token (secret).
	BotToken string
	// SigningSecretEnv names the variable holding the signing secret that
	// verifies /slack/interactions and /slack/commands. Required unless Socket Mode.
	SigningSecretEnv string
	// SigningSecret is the resolved signing secret (secret).
	SigningSecret string
	// AppTokenEnv names the variable holding an app-level token (xapp-…);
	// setting it selects Socket Mode.
	AppTokenEnv string
	// AppToken is the resolved app-level token (secret).
	AppToken string
	// ChannelID is where cards are posted (an ID such as C0123456, not a name:
	// chat.update needs the ID).
	ChannelID string
	// Approvers are the Slack user ids allowed to decide.
	Approvers []string
	// Admins are the Slack user ids allowed to revoke grants from Slack.
	Admins []string
	// APIURL is the Web API base, "https://slack.com/api/" by default; it ends in "/".
	APIURL string
	// Language of cards, buttons, the Home tab and command answers: "en"
	// (the default) or "it".
	Language string
}

// Enabled reports whether a bot token is configured.
func (s Slack) Enabled() bool { return s.BotTokenEnv != "" || s.BotToken != "" }

// SocketMode reports whether an app-level token is configured.
func (s Slack) SocketMode() bool { return s.AppTokenEnv != "" || s.AppToken != "" }

// Discord is the [discord] table. It is enabled by setting token_env.
type Discord struct {
	// TokenEnv names the variable holding the bot token.
	TokenEnv string
	// Token is the resolved bot token (secret).
	Token string
	// ApplicationID is the application's id (slash commands are
	// registered under it; interaction follow-ups go to its webhook).
	ApplicationID string
	// PublicKey is the application's Ed25519 public key, hex: it verifies
	// /discord/interactions. Required in HTTP mode.
	PublicKey string
	// GuildID is the server the bot serves; ChannelID the channel cards
	// are posted to. Taps and commands from anywhere else are refused.
	GuildID, ChannelID string
	// Approvers are the Discord user ids allowed to decide; Admins those
	// allowed to revoke grants and see the rules and the audit.
	Approvers, Admins []string
	// Language of cards, buttons and command answers: "en" or "it".
	Language string
	// Mode is how taps arrive: "gateway" (the websocket, the default) or
	// "http" (the interactions endpoint /discord/interactions).
	Mode string
	// APIURL is the versioned REST base, "https://discord.com/api/v10" by
	// default; the websocket's address comes from its GET /gateway/bot.
	APIURL string
}

// The discord.mode values.
const (
	DiscordModeGateway = "gateway"
	DiscordModeHTTP    = "http"
)

// Enabled reports whether a bot token is configured.
func (d Discord) Enabled() bool { return d.TokenEnv != "" || d.Token != "" }

// HTTPMode reports whether taps arrive on the interactions endpoint.
func (d Discord) HTTPMode() bool { return d.Mode == DiscordModeHTTP }

// Hooks is the [hooks] table: one section per coding agent whose hooks
// the gateway answers.
type Hooks struct {
	ClaudeCode ClaudeCode // [hooks.claude_code]
	Codex      HookAgent  // [hooks.codex]
	Gemini     HookAgent  // [hooks.gemini]
	Cursor     HookAgent  // [hooks.cursor]
	Copilot    HookAgent  // [hooks.copilot]
}

// ClaudeCode is [hooks.claude_code], the PreToolUse hook adapter (SPEC §9).
type ClaudeCode = HookAgent

// HookAgent is one agent's hook section: [hooks.claude_code],
// [hooks.codex], [hooks.gemini], [hooks.cursor], [hooks.copilot]. Every section has the
// same keys and the same defaults.
type HookAgent struct {
	// Wait is how long the hook waits for a person before answering "ask";
	// keep it under the agent's own hook timeout.
	Wait time.Duration
	// UnknownTool is the answer for a tool with no mapping: "ask" or "deny".
	UnknownTool string
	// Tools maps extra tool names (e.g. "mcp__gmail__send") to capabilities.
	Tools map[string]string
}

// Log is the optional [log] table.
type Log struct {
	// Format is "text", "json", or "" to choose by whether stderr is a terminal.
	Format string
	// Level is "debug", "info", "warn" or "error".
	Level string
}

// Default returns the SPEC defaults, with paths from the process environment,
// and no agents.
func Default() Config { return defaults(nil) }

func defaults(getenv func(string) string) Config {
	getenv = orEnv(getenv)
	return Config{
		Server:  Server{Listen: "127.0.0.1:8080"},
		Storage: Storage{Path: filepath.Join(StateDir(getenv), "gateway.db"), Driver: "sqlite"},
		Policy:  Policy{GrantTTL: 2160 * time.Hour, StaleAfter: 2160 * time.Hour},
		Vaglio: Vaglio{
			JudgeKind: JudgeRuleBased,
			LLM: VaglioLLM{API: LLMAPIOpenAI, URL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b",
				Timeout: 5 * time.Second, MaxCallsPerDay: 5000, OnFailure: LLMOnFailureAsk},
			JudgeThreshold: 0.30,
			LogDir:         filepath.Join(xdgDir(getenv, "XDG_DATA_HOME", ".local/share"), "metnos", "vaglio"),
		},
		Approvals: Approvals{Timeout: 10 * time.Minute, PruneSchedule: "@hourly", Retention: 8760 * time.Hour,
			AllowFor: []time.Duration{time.Hour}, SessionTTL: 12 * time.Hour},
		Web:      Web{Language: string(locale.DefaultLang), Users: []WebUser{{Name: DefaultWebUser}}},
		Telegram: Telegram{APIEndpoint: "https://api.telegram.org/bot%s/%s", Language: string(locale.DefaultLang)},
		Slack:    Slack{APIURL: "https://slack.com/api/", Language: string(locale.DefaultLang)},
		Discord: Discord{APIURL: "https://discord.com/api/v10", Language: string(locale.DefaultLang),
			Mode: DiscordModeGateway},
		Hooks: Hooks{ClaudeCode: defaultHookAgent(), Codex: defaultHookAgent(), Gemini: defaultHookAgent(), Cursor: defaultHookAgent(),
			Copilot: defaultHookAgent()},
		Log: Log{Level: "info"},
	}
}

// DefaultPath is where the config file is looked for when --config is not
// given: $GATEWAY_CONFIG, else $XDG_CONFIG_HOME/metnos/gateway.toml, else
// ~/.config/metnos/gateway.toml. A nil getenv means os.Getenv.
func DefaultPath(getenv func(string) string) string {
	getenv = orEnv(getenv)
	if p := getenv("GATEWAY_CONFIG"); p != "" {
		return ExpandHome(p, getenv)
	}
	return filepath.Join(xdgDir(getenv, "XDG_CONFIG_HOME", ".config"), "metnos", "gateway.toml")
}

// Locate picks the config file for a command: the --config flag value when
// given, else $GATEWAY_CONFIG (both explicit: the file must exist), else the
// default path (missing means defaults). Pass the result to Load.
func Locate(flag string, getenv func(string) string) (path string, explicit bool) {
	getenv = orEnv(getenv)
	switch {
	case flag != "":
		return ExpandHome(flag, getenv), true
	case getenv("GATEWAY_CONFIG") != "":
		return DefaultPath(getenv), true
	}
	return DefaultPath(getenv), false
}

// StateDir is where the database and the generated local agent token live:
// $XDG_STATE_HOME/metnos, else ~/.local/state/metnos. A nil getenv means os.Getenv.
func StateDir(getenv func(string) string) string {
	return filepath.Join(xdgDir(orEnv(getenv), "XDG_STATE_HOME", ".local/state"), "metnos")
}

// ExpandHome replaces a leading "~" or "~/" with $HOME. Other paths, "~user"
// forms, and every path when HOME is empty, are returned unchanged (Validate
// then refuses a storage or log path still starting with "~").
func ExpandHome(p string, getenv func(string) string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home := orEnv(getenv)("HOME")
	if home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// xdgDir returns $name when it is absolute (the XDG spec says to ignore
// relative values), else ~/fallback.
func xdgDir(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); filepath.IsAbs(v) {
		return v
	}
	return ExpandHome("~/"+fallback, getenv)
}

const redacted = "[redacted]"

// Redacted returns a copy in which every secret that is set reads
// "[redacted]" (an unset one stays empty, so `config show` tells the two
// apart). The copy shares nothing mutable with c.
func (c Config) Redacted() Config {
	r := c
	r.Storage.DSN = redact(c.Storage.DSN)
	r.Web.AdminToken = redact(c.Web.AdminToken)
	r.Telegram.Token = redact(c.Telegram.Token)
	r.Telegram.WebhookSecret = redact(c.Telegram.WebhookSecret)
	r.Telegram.Approvers = append([]int64(nil), c.Telegram.Approvers...)
	r.Slack.BotToken = redact(c.Slack.BotToken)
	r.Slack.SigningSecret = redact(c.Slack.SigningSecret)
	r.Slack.AppToken = redact(c.Slack.AppToken)
	r.Slack.Approvers = append([]string(nil), c.Slack.Approvers...)
	r.Slack.Admins = append([]string(nil), c.Slack.Admins...)
	r.Policy.Rules = append([]Rule(nil), c.Policy.Rules...)
	r.Approvals.AllowFor = append([]time.Duration(nil), c.Approvals.AllowFor...)
	if c.Policy.Notify != nil {
		r.Policy.Notify = make([]Notify, len(c.Policy.Notify))
		for i, n := range c.Policy.Notify {
			n.WebhookSecret = redact(n.WebhookSecret)
			n.Deliveries = append([]string(nil), n.Deliveries...)
			r.Policy.Notify[i] = n
		}
	}
	if c.Approvals.Routes != nil {
		r.Approvals.Routes = make([]Route, len(c.Approvals.Routes))
		for i, rt := range c.Approvals.Routes {
			rt.Notify = append([]string(nil), rt.Notify...)
			rt.Approvers = append([]string(nil), rt.Approvers...)
			rt.EscalateTo = append([]string(nil), rt.EscalateTo...)
			r.Approvals.Routes[i] = rt
		}
	}
	if c.Agents != nil {
		r.Agents = make([]Agent, len(c.Agents))
		for i, a := range c.Agents {
			a.Token = redact(a.Token)
			a.Notify = append([]string(nil), a.Notify...)
			a.AllowCapabilities = append([]string(nil), a.AllowCapabilities...)
			a.DenyCapabilities = append([]string(nil), a.DenyCapabilities...)
			r.Agents[i] = a
		}
	}
	r.MCP = redactedMCP(c.MCP)
	for _, h := range []*HookAgent{&r.Hooks.ClaudeCode, &r.Hooks.Codex, &r.Hooks.Gemini, &r.Hooks.Cursor,
		&r.Hooks.Copilot} {
		if h.Tools != nil {
			h.Tools = maps.Clone(h.Tools)
		}
	}
	return r
}

// defaultHookAgent is every hook section's default: wait 9 minutes (under
// the 10-minute hook timeout docs/agents.md sets for each agent), unknown
// tools ask, no extra tools.
func defaultHookAgent() HookAgent {
	return HookAgent{Wait: 9 * time.Minute, UnknownTool: "ask", Tools: map[string]string{}}
}

// HookSection names one agent's hook section: Agent is the name of
// `gateway hook NAME` and of POST /v1/hooks/NAME, Key the config table.
type HookSection struct {
	Agent, Key string
	Section    *HookAgent
}

// HookSections are every agent's hook section.
func (h *Hooks) HookSections() []HookSection {
	return []HookSection{
		{"claude-code", "hooks.claude_code", &h.ClaudeCode},
		{"codex", "hooks.codex", &h.Codex},
		{"gemini", "hooks.gemini", &h.Gemini},
		{"cursor", "hooks.cursor", &h.Cursor},
		{"copilot", "hooks.copilot", &h.Copilot},
	}
}

// Section is the hook section of an agent by name, or nil.
func (h *Hooks) Section(agent string) *HookAgent {
	for _, s := range h.HookSections() {
		if s.Agent == agent {
			return s.Section
		}
	}
	return nil
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redacted
}

// shown is Config without methods, so that LogValue does not recurse.
type shown Config

// LogValue makes slog print the redacted copy, so logging a Config never leaks a secret.
func (c Config) LogValue() slog.Value { return slog.AnyValue(shown(c.Redacted())) }

func orEnv(getenv func(string) string) func(string) string {
	if getenv == nil {
		return osGetenv
	}
	return getenv
}

// OwnPaths are the gateway's own files and directories, forbidden to every
// agent (vaglio.Own): the SQLite database (its -wal, -shm and -journal
// too), the generated token file beside it, the config file, the state
// directory, the directory that holds the database and the decision-log
// directory. A directory shared with other things (/, /tmp, the home
// directory or one above it) is left out; the files in it are still
// listed. A nil getenv means os.Getenv.
func (c Config) OwnPaths(getenv func(string) string) []string {
	getenv = orEnv(getenv)
	home := getenv("HOME")
	var out []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	addDir := func(d string) {
		if d != "" && filepath.IsAbs(d) && !sharedDir(filepath.Clean(d), home) {
			add(d)
		}
	}
	if c.Storage.Driver == "" || c.Storage.Driver == "sqlite" {
		add(c.Storage.Path)
		add(filepath.Join(filepath.Dir(c.Storage.Path), TokenFileName))
		addDir(filepath.Dir(c.Storage.Path))
	}
	add(c.File)
	addDir(StateDir(getenv))
	addDir(c.Vaglio.LogDir)
	return out
}

// TokenFileName is the file beside the database that holds the generated
// local agent's token.
const TokenFileName = "agent-token"

// sharedDir reports a directory that holds far more than the gateway's
// files: protecting it whole would forbid agents the machine.
func sharedDir(d, home string) bool {
	if strings.Count(d, "/") <= 1 {
		return true // /, /tmp, /srv, /home
	}
	switch d {
	case "/var/tmp", "/var/lib", "/var/log", "/usr/local", "/usr/share", "/run/user", filepath.Clean(os.TempDir()):
		return true
	}
	if home != "" {
		h := filepath.Clean(home)
		return d == h || strings.HasPrefix(h, d+"/")
	}
	return false
}
