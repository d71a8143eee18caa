// Package approvals owns the life of an approval request: submitted,
// decided by policy or by a person, expired or cancelled; the waiting
// agents; the cards on every messenger; callbacks; audit; and the prune job.
// It does not know which messengers exist: each is a Notifier.
package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// Status is where a request is in its life. Only pending ever changes.
type Status string

// The states of SPEC §5.
const (
	StatusPending   Status = "pending"
	StatusAllowed   Status = "allowed"
	StatusDenied    Status = "denied"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// Finished reports whether the status is final.
func (s Status) Finished() bool { return s != StatusPending }

// Decision is what a person (or the admin API) chose.
type Decision string

// The decisions a card offers.
const (
	AllowOnce   Decision = "allow_once"
	AllowAlways Decision = "allow_always"
	// AllowFor writes a grant on the request's default scope that ends a
	// chosen while (one of approvals.allow_for) after the decision.
	AllowFor Decision = "allow_for"
	// AllowSession writes a grant on the request's default scope that
	// matches only requests of the same agent and session, for
	// approvals.session_ttl at most.
	AllowSession Decision = "allow_session"
	Deny         Decision = "deny"
)

// ParseDecision validates a decision name.
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(s); d {
	case AllowOnce, AllowAlways, AllowFor, AllowSession, Deny:
		return d, nil
	}
	return "", fmt.Errorf("%w: unknown decision %q (want allow_once, allow_always, allow_for, allow_session or deny)",
		ErrInvalid, s)
}

// WritesGrant reports whether the decision writes a grant.
func (d Decision) WritesGrant() bool { return d == AllowAlways || d == AllowFor || d == AllowSession }

// Errors callers test with errors.Is.
// TooManyPendingError refuses a request past the agent's max_pending.
type TooManyPendingError struct {
	Agent string
	Max   int
}

func (e *TooManyPendingError) Error() string {
	return fmt.Sprintf("agent %s has %d requests pending (agents[].max_pending); wait for decisions or withdraw some", e.Agent, e.Max)
}

var (
	ErrNotFound = errors.New("request not found")
	// ErrAlreadyDecided: the request is finished; errors.As an
	// *AlreadyDecidedError to learn who decided first.
	ErrAlreadyDecided = errors.New("request already decided")
	// ErrInvalid: bad input; the message names the field.
	ErrInvalid = errors.New("invalid")
	// ErrAllowAlwaysRefused: Allow always on a capability that needs a
	// person every time (code:exec, mail:send).
	ErrAllowAlwaysRefused = errors.New("allow always is not offered for this capability")
	// ErrNotApprover: the person is not among the request's approvers (its
	// route's, else the channel's own). Nothing changed.
	ErrNotApprover = errors.New("not an approver for this request")
	// ErrOutsider comes with ErrNotApprover when the person is not even
	// an approver of the channel they used (Actor.Outsider).
	ErrOutsider = errors.New("not an approver of this channel")
	// ErrNotOffered: a scope or a while the request's card did not offer
	// (a forged or stale tap). Nothing changed.
	ErrNotOffered = errors.New("not offered on this request")
	// ErrAlreadyCounted: the person's allow was already counted towards the
	// quorum; errors.As an *AlreadyCountedError for the request.
	ErrAlreadyCounted = errors.New("approval already counted")
	// ErrStepUpRequired: an allow without a passkey assertion on a request
	// whose route has step_up = "passkey". Nothing changed.
	ErrStepUpRequired = errors.New("this request needs an allow signed with a passkey on the web page")
	// ErrOwnRequest: an agent's token may not decide a request it or
	// its child tokens made (separation of duties), admin or not.
	ErrOwnRequest = errors.New("an agent may not decide its own request")
)

// ErrCallIDConflict: the agent used a call_id it had used before for a
// different call; errors.As a *CallIDConflictError for the earlier request.
var ErrCallIDConflict = errors.New("call_id conflict")

// CallIDConflictError refuses a submission whose call_id names an earlier
// request of the same agent that differs in what it asks (capability,
// target, grant_target, autonomy, channel, sender_id or the set of arg
// keys). An idempotency key must never hand one call's answer to another.
type CallIDConflictError struct {
	CallID  string
	Earlier Request
	// Fields lists the fields that differ, by their API names.
	Fields []string
}

func (e *CallIDConflictError) Error() string {
	return fmt.Sprintf("call_id %q was already used for request %s, which differs in %s; use a new call_id for a new call",
		e.CallID, e.Earlier.ID, strings.Join(e.Fields, ", "))
}

// Is makes errors.Is(err, ErrCallIDConflict) true.
func (e *CallIDConflictError) Is(target error) bool { return target == ErrCallIDConflict }

// AlreadyCountedError carries the still pending request to an approver
// who allowed it before.
type AlreadyCountedError struct{ Request Request }

func (e *AlreadyCountedError) Error() string {
	return fmt.Sprintf("request %s: your approval is already counted (%d of %d)", e.Request.ID,
		e.Request.AllowCount(), e.Request.Quorum)
}

// Is makes errors.Is(err, ErrAlreadyCounted) true.
func (e *AlreadyCountedError) Is(target error) bool { return target == ErrAlreadyCounted }

// AlreadyDecidedError carries the finished request to whoever came second.
type AlreadyDecidedError struct{ Request Request }

func (e *AlreadyDecidedError) Error() string {
	r := e.Request
	who := r.DecidedBy
	if who == "" {
		who = "policy"
	}
	return fmt.Sprintf("request %s already %s by %s", r.ID, r.Status, who)
}

// Is makes errors.Is(err, ErrAlreadyDecided) true.
func (e *AlreadyDecidedError) Is(target error) bool { return target == ErrAlreadyDecided }

// Request is an approval request as agents and cards see it. Argument
// values are never stored: only their keys.
type Request struct {
	ID          string          `json:"id"`
	CallID      string          `json:"call_id"`
	Agent       string          `json:"agent"`
	Status      Status          `json:"status"`
	Decision    *Decision       `json:"decision"`
	Outcome     policy.Outcome  `json:"outcome"`
	Reason      string          `json:"reason"`
	BlockedBy   *string         `json:"blocked_by"`
	Vaglio      *vaglio.Verdict `json:"vaglio"`
	Capability  string          `json:"capability"`
	Critical    bool            `json:"critical"`
	Target      string          `json:"target"`
	GrantTarget string          `json:"grant_target,omitempty"` // what Allow always would grant
	// Scopes are what Allow always may grant instead, narrowest first
	// (policy.Normalizer.Scopes); GrantTarget is among them.
	Scopes []string `json:"scopes,omitempty"`
	// AllowFor are the whiles Allow for offers ("1h"), fixed when the
	// request was created: a later config change does not widen a card.
	AllowFor  []string      `json:"allow_for,omitempty"`
	Autonomy  policy.Level  `json:"autonomy"`
	Channel   string        `json:"channel"`
	SenderID  string        `json:"sender_id"`
	SessionID string        `json:"session_id,omitempty"` // the agent's session, if it named one
	Intent    string        `json:"intent"`
	Executor  string        `json:"executor"`
	Summary   string        `json:"summary"`
	ArgKeys   []string      `json:"arg_keys"`
	DecidedBy string        `json:"decided_by"`
	DecidedAt *time.Time    `json:"decided_at"`
	CreatedAt time.Time     `json:"created_at"`
	ExpiresAt time.Time     `json:"expires_at"`
	GrantID   *int64        `json:"grant_id"`
	Note      string        `json:"note"`
	Trace     []policy.Step `json:"trace"`
	Notify    []string      `json:"notify,omitempty"`
	// TokenID names the child token the request came with (empty: the
	// agent's own token); TokenName is its name, for the card's Agent line.
	TokenID     string `json:"token_id,omitempty"`
	TokenName   string `json:"token_name,omitempty"`
	CallbackURL string `json:"-"`
	// GrantExpiresAt is when the grant written by Allow always ends (or
	// would end, while pending): the card shows it.
	GrantExpiresAt *time.Time `json:"grant_expires_at,omitempty"`
	// Quorum is how many distinct approvers must allow (1 unless a route
	// asks for more); Approvals are the decisions counted so far, in order.
	Quorum    int        `json:"quorum"`
	Approvals []Approval `json:"approvals"`
	// EscalatedAt is when the card went to the route's escalate_to.
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`

	// What the request's route said, stored with it (see Route).
	Approvers     []string      `json:"-"`
	EscalateAfter time.Duration `json:"-"`
	EscalateTo    []string      `json:"-"`
	RemindEvery   time.Duration `json:"-"`
	// StepUp is "passkey" when every allow needs the approver's passkey
	// (the route's step_up), else "".
	StepUp string `json:"step_up,omitempty"`
	// Rev counts the changes a card shows besides the status.
	Rev int64 `json:"-"`

	// encoded is Trace and Vaglio as JSON, when Submit encoded them for
	// the row: the answer writes them again (AppendJSON) instead of
	// encoding them twice. Empty elsewhere; neither is changed after Submit.
	encoded encodedJSON
}

// Approval is one person's decision counted on a request.
type Approval struct {
	By       string    `json:"by"`       // as decided_by reads: "telegram:Roberto (42)"
	Approver string    `json:"approver"` // the identity routes name: "telegram:42"
	Decision Decision  `json:"decision"`
	Channel  string    `json:"channel"`
	At       time.Time `json:"at"`
	// Scope is the scope chosen with Allow always; For the while of Allow
	// for ("1h").
	Scope string `json:"scope,omitempty"`
	For   string `json:"for,omitempty"`
	// EveryAgent: the grant is for every agent of the principal, not only
	// the request's agent (an explicit choice, never on a guarded route).
	EveryAgent bool `json:"every_agent,omitempty"`
	// Passkey names the passkey that signed this allow (step-up).
	Passkey string `json:"passkey,omitempty"`
	// proof is the signature itself, for the audit row.
	proof *passkeys.Proof
}

// AllowCount is how many counted approvals allow.
func (r Request) AllowCount() int {
	n := 0
	for _, a := range r.Approvals {
		if a.Decision != Deny {
			n++
		}
	}
	return n
}

// Counted reports whether the approver's allow is already counted.
func (r Request) Counted(approver string) bool {
	for _, a := range r.Approvals {
		if a.Approver == approver && a.Decision != Deny {
			return true
		}
	}
	return false
}

// AgentLine is who asks, as the card's Agent line shows it: the agent, and
// the child token it came with ("metnos › refactor-bot").
func (r Request) AgentLine() string {
	switch {
	case r.TokenName != "":
		return r.Agent + " › " + r.TokenName
	case r.TokenID != "":
		return r.Agent + " › " + r.TokenID
	}
	return r.Agent
}

// AllowSessionOffered reports whether the card may show Allow this
// session: the request names its session, and its capability is approved
// per target (never code:exec or mail:send).
func (r Request) AllowSessionOffered() bool {
	c, err := policy.Lookup(r.Capability)
	return err == nil && r.SessionID != "" && c.DefaultApproval == policy.ApprovalPerTarget
}

// AllowAlwaysOffered reports whether the card may show Allow always.
func (r Request) AllowAlwaysOffered() bool {
	c, err := policy.Lookup(r.Capability)
	if err != nil || c.DefaultApproval == policy.ApprovalAlways {
		return false
	}
	// Writing a persistence point is code execution: asked every time.
	_, persistence := vaglio.PersistenceWithin(r.Target)
	return !(c.Name == "fs:write" && persistence)
}

// The channels of the gateway itself. Each messenger names its own
// (telegram.Name, slack.Name): approvals does not know them.
const (
	ChannelWeb = "web" // the web page: cards, decisions by its owner
	ChannelAPI = "api" // the HTTP API: an admin agent's decision
	// ChannelWebPush is the web users' devices (Web Push): a request whose
	// notify names "web" gets a card there too, when a notifier of that
	// name is registered. Its decisions are still ChannelWeb's.
	ChannelWebPush = "web-push"
)

// Actor is who decided: the channel they used, their id there, and a name
// for people to read ("Roberto").
type Actor struct {
	Channel string // ChannelWeb, ChannelAPI, or a messenger's name ("telegram", "slack")
	ID      string
	Name    string
	// Outsider says the person is not among the channel's own approvers
	// (telegram.approvers, slack.approvers): they may decide only requests
	// whose route names them. The web owner and admin agents are insiders.
	Outsider bool
	// Passkey is the verified passkey assertion that came with the
	// decision (the web page's step-up), nil for a tap. An allow of a
	// request whose route has step_up = "passkey" needs one, by this very
	// web user, over this request and decision.
	Passkey *passkeys.Proof
}

// Identity is the approver identity routes name: "telegram:<user id>",
// "slack:<member id>", "web:<login name>", "agent:<agent id>" (the API).
func (a Actor) Identity() string {
	switch a.Channel {
	case ChannelAPI:
		return "agent:" + a.ID
	case ChannelWeb:
		return "web:" + a.Name
	}
	return a.Channel + ":" + a.ID
}

// String is how decided_by and granted_by read: "telegram:Roberto (42)".
func (a Actor) String() string {
	switch {
	case a.Name != "" && a.ID != "" && a.Name != a.ID:
		return fmt.Sprintf("%s:%s (%s)", a.Channel, a.Name, a.ID)
	case a.Name != "":
		return a.Channel + ":" + a.Name
	}
	return a.Channel + ":" + a.ID
}

// Notifier is one messenger: it posts a card for a pending request and
// edits it when anything changes. The approval flow calls it from its own
// dispatcher, retrying failures with backoff, so an implementation just
// makes the call and returns the error. ref is whatever the messenger needs
// to edit the card later (a message id); it is persisted, so edits work
// after a restart.
type Notifier interface {
	Name() string
	Post(ctx context.Context, r Request) (ref string, err error)
	Update(ctx context.Context, r Request, ref string) error
}

// Reminder is implemented by a Notifier that can remind people of a
// pending request next to its card (a Telegram reply, a Slack thread).
type Reminder interface {
	Remind(ctx context.Context, r Request, ref string) error
}

// Summarizer is implemented by a Notifier that can say, in one message,
// how many more requests of each agent wait without a card of their own
// there (past the agent's cards_per_minute), with a link to the web page.
type Summarizer interface {
	Summarize(ctx context.Context, waiting []Waiting) error
}

// Waiting is how many pending requests of one agent have no card of their
// own on a messenger.
type Waiting struct {
	Agent string
	N     int
}

// GroupResolver is implemented by a Notifier whose platform has groups of
// people that routes may name as approvers (Slack user groups, "S…").
type GroupResolver interface {
	// IsGroup reports whether id names a group rather than a person.
	IsGroup(id string) bool
	// InGroup reports whether user belongs to group now.
	InGroup(ctx context.Context, group, user string) (bool, error)
}

// RetryAfterError is implemented by Notifier errors that know how long the
// messenger asked us to wait (Telegram retry_after, Slack Retry-After).
type RetryAfterError interface {
	error
	RetryAfter() time.Duration
}

// Event is what waiting agents and SSE streams receive.
type Event struct {
	Kind    string  `json:"kind"` // "approval_required" | "approval_resolved"
	Request Request `json:"request"`
}

// The event kinds.
const (
	EventRequired = "approval_required"
	EventResolved = "approval_resolved"
	// EventProgress: an approval was counted; the quorum is not reached yet.
	EventProgress = "approval_progress"
)
