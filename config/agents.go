// The [[agents]] entries: an agent's section, its defaults (NewAgent),
// its policy profile and whom it may act for.

package config

import (
	"log/slog"
	"time"

	"github.com/metnos/gateway/policy"
)

// Agent is one [[agents]] entry: who may call the API and with what ceiling.
type Agent struct {
	// ID names the agent in rules, logs and cards: [a-z0-9_.-], unique.
	ID string `toml:"id"`
	// TokenEnv names the environment variable holding the agent's bearer token.
	TokenEnv string `toml:"token_env"`
	// Token is the resolved bearer token (secret). It also keys the HMAC of callbacks.
	Token string `toml:"-"`
	// Autonomy is the ceiling: a request may lower it, never raise it.
	Autonomy policy.Level `toml:"autonomy"`
	// Channel and SenderID are the default principal for the agent's requests.
	Channel  string `toml:"channel"`
	SenderID string `toml:"sender_id"`
	// Notify lists where cards go: "web" and the registered messengers (by name). The web page
	// always lists pending requests whatever this says.
	Notify []string `toml:"notify"`
	// Rate is the per-capability token bucket, "N/s", "N/m" or "N/h".
	// Validate parses it into RateCount (also the burst) per RatePer.
	Rate      string        `toml:"rate"`
	RateCount int           `toml:"-"`
	RatePer   time.Duration `toml:"-"`
	// CardsPerMinute bounds the new cards the agent's requests put on each
	// messenger in any 60 s (DefaultCardsPerMinute; 0 = no bound). Beyond
	// it requests still wait, and the messenger says how many more there
	// are, once a minute, with a link to the web page.
	CardsPerMinute int `toml:"cards_per_minute"`
	// Admin agents may decide requests and manage grants through the API.
	Admin bool `toml:"admin"`
	// AllowCapabilities, when not empty, is the only capabilities the agent may
	// use; DenyCapabilities are never allowed. Exact registry names only.
	AllowCapabilities []string `toml:"allow_capabilities"`
	DenyCapabilities  []string `toml:"deny_capabilities"`
	// Mode is "ask" (a person is asked: the default) or "restrict" (what a
	// person would be asked about is denied at once).
	Mode policy.Mode `toml:"mode"`
	// Principals lists, as "channel:sender_id", the people besides its
	// default principal that a non-admin agent may act for (and so use the
	// grants of). Admin agents may name any principal.
	Principals []string `toml:"principals"`
	// Callbacks are the URL patterns a request's callback_url must match
	// (agents[].callbacks): "*" matches any run of characters but "/".
	// Empty: the agent may not ask for callbacks at all.
	Callbacks []string `toml:"callbacks"`
	// MaxPending caps the agent's requests pending at once
	// (agents[].max_pending, default DefaultMaxPending).
	MaxPending int `toml:"max_pending"`
	// MaxStreams caps the agent's open waits at once: SSE streams
	// (GET /v1/events), long-polls (?wait=) and hook calls
	// (/v1/hooks/NAME, denied past it), each of which holds a
	// connection for minutes (agents[].max_streams, default
	// DefaultMaxStreams). Past it: 429 too_many_streams.
	MaxStreams int `toml:"max_streams"`
	// MaxChildren caps the agent's live child tokens (made through
	// POST /v1/tokens, at any depth, neither revoked nor expired)
	// (agents[].max_children, default DefaultMaxChildren). Past it: 429
	// too_many_children. Creations also take from a bucket of the agent's
	// rate of their own.
	MaxChildren int `toml:"max_children"`
	// Workspace lists the directories the agent works in (absolute, or
	// under "~/"). When set, fs:* requests outside them ask a person at
	// every level (approval_required where the table would allow).
	Workspace []string `toml:"workspace"`
	// Run is what `gateway run` adds to its sandbox for the agent
	// (agents[].run; see AgentRun).
	Run AgentRun `toml:"run"`
	// Home is the agent's home directory on its own machine
	// (agents[].home), "" when not set: what "~" stands for in its
	// requests, and the tree whose search asks (it holds ~/.ssh). A hook
	// run through `gateway hook` sends the home of its own environment,
	// which takes its place.
	Home string `toml:"home"`
}

// DefaultMaxStreams is agents[].max_streams when the file does not say.
const DefaultMaxStreams = 32

// DefaultMaxChildren is agents[].max_children when the file does not say.
const DefaultMaxChildren = 100

// DefaultMaxPending is agents[].max_pending when the file does not say.
const DefaultMaxPending = 100

// MinTokenLen is the shortest agent or admin token config check accepts:
// a token is a password that agents and scripts hold, not one a person
// types, and the generated ones are 51 characters.
const MinTokenLen = 24

// Profile is the agent's restrictive profile for policy decisions.
func (a Agent) Profile() policy.Profile {
	return policy.Profile{Agent: a.ID, Ceiling: a.Autonomy, Allow: a.AllowCapabilities, Deny: a.DenyCapabilities,
		Mode: a.Mode, Workspace: a.Workspace, Home: a.Home}
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
		ID:          id,
		Autonomy:    policy.Supervised,
		Channel:     "web",
		SenderID:    "owner",
		Notify:      []string{NotifyWeb},
		Mode:        policy.ModeAsk,
		Rate:        "60/m",
		RateCount:   60,
		RatePer:     time.Minute,
		MaxPending:  DefaultMaxPending,
		MaxStreams:  DefaultMaxStreams,
		MaxChildren: DefaultMaxChildren,

		CardsPerMinute: DefaultCardsPerMinute,
	}
}

// DefaultCardsPerMinute is [[agents]] cards_per_minute's default.
const DefaultCardsPerMinute = 30

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
