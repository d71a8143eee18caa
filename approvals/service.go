package approvals

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/metnos/gateway/internal/callbackurl"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// Timeout bounds of SPEC §5: a request's timeout_s is clamped to these.
const (
	MinTimeout = 10 * time.Second
	MaxTimeout = 24 * time.Hour
	// NoteWindow is how long after a decision the owner may attach a note.
	NoteWindow = 10 * time.Minute
	// MaxCallIDBytes bounds call_id; it is an idempotency key, not a payload.
	MaxCallIDBytes = 256
)

// Options configures a Service.
type Options struct {
	GrantTTL time.Duration // lifetime of grants written by Allow always (0 = none)
	// AllowFor are the whiles Allow for offers (approvals.allow_for).
	AllowFor []time.Duration
	// SessionTTL is how long an Allow this session grant lives at most
	// (approvals.session_ttl; 0: 12h).
	SessionTTL     time.Duration
	DefaultTimeout time.Duration // when a request gives no timeout
	StaleAfter     time.Duration // prune: revoke grants unused for this long
	Retention      time.Duration // prune: delete finished rows older than this
	Now            func() time.Time
	Logger         *slog.Logger
	// CallbackKey returns the HMAC key for an agent's callbacks (its token).
	CallbackKey func(agent string) []byte
	// CallbackAllowed checks a callback URL against the agent's
	// agents[].callbacks again when it is sent (the config may have
	// changed); nil sends no callback at all.
	CallbackAllowed func(agent, url string) (callbackurl.Allowed, error)
	// CallbackResolver resolves callback hosts; nil: the system's.
	CallbackResolver callbackurl.Resolver
	// Observer is told about outcomes and send failures (metrics); may be nil.
	Observer Observer
	// Routes are [[approvals.routes]], in order: the first match wins.
	Routes []Route
	// CardsPerMinute gives an agent's cards_per_minute: the new cards its
	// requests may put on one messenger in any 60 s (0 = no bound). Nil:
	// no bound for anyone.
	CardsPerMinute func(agent string) int
	// Notify are the [[policy.notify]] patterns (nil: none): a request
	// allowed on arrival that matches one is told to its deliveries.
	Notify *policy.NotifySet
	// NotifyKey returns the HMAC key of a webhook delivery: the secret of
	// the pattern (by index) whose webhook_url is url.
	NotifyKey func(pattern int, url string) []byte
}

// Observer receives what metrics count. Every method must be cheap.
type Observer interface {
	Outcome(capability string, outcome policy.Outcome, status Status)
	Decided(status Status, latency time.Duration)
	SendFailed(channel string)
}

// Service runs the approval flow over one database.
type Service struct {
	db        *storage.DB
	grants    *policy.GrantStore
	decider   *policy.Decider
	opts      Options
	now       func() time.Time
	log       *slog.Logger
	hub       *hub
	notifiers map[string]Notifier
	wake      map[string]chan struct{}
	// announcers are the deliveries of notifications, by name; each has a
	// wake channel in announceWake.
	announcers   map[string]announcer
	announceWake map[string]chan struct{}
	timerWake    chan struct{} // a request with an escalation or reminders was created
	callbacks    *callbacker
	wg           sync.WaitGroup
	// cardTimes holds, per messenger and agent, when its recent new cards
	// were posted (see overCardRate).
	cardMu    sync.Mutex
	cardTimes map[string][]time.Time
	// dispatching counts running RunDispatch calls: a replica that runs no
	// dispatcher need not load a request another replica changed unless
	// someone here waits for it.
	dispatching atomic.Int32
}

// New returns a Service. Notifiers are added with AddNotifier before Run.
func New(db *storage.DB, grants *policy.GrantStore, decider *policy.Decider, opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DefaultTimeout == 0 {
		opts.DefaultTimeout = 10 * time.Minute
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	s := &Service{
		db: db, grants: grants, decider: decider, opts: opts, now: opts.Now, log: opts.Logger,
		hub: newHub(), notifiers: map[string]Notifier{}, wake: map[string]chan struct{}{}, timerWake: make(chan struct{}, 1),
		cardTimes: map[string][]time.Time{},
	}
	s.callbacks = newCallbacker(opts.CallbackKey, opts.CallbackAllowed, opts.CallbackResolver, opts.Logger)
	s.announcers, s.announceWake = map[string]announcer{}, map[string]chan struct{}{}
	for _, a := range s.builtinAnnouncers() {
		s.addAnnouncer(a)
	}
	return s
}

func (s *Service) addAnnouncer(a announcer) {
	s.announcers[a.name] = a
	s.announceWake[a.name] = make(chan struct{}, 1)
}

// AddNotifier registers a messenger. Call before Run.
func (s *Service) AddNotifier(n Notifier) {
	s.notifiers[n.Name()] = n
	s.wake[n.Name()] = make(chan struct{}, 1)
	if a, ok := n.(Announcer); ok {
		s.addAnnouncer(announcer{name: n.Name(), send: a.Announce})
	}
}

// Notifiers lists the registered messenger names.
func (s *Service) Notifiers() []string {
	out := make([]string, 0, len(s.notifiers))
	for n := range s.notifiers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Grants returns the grants store the service writes to.
func (s *Service) Grants() *policy.GrantStore { return s.grants }

// DB returns the database (for audit listings and health checks).
func (s *Service) DB() *storage.DB { return s.db }

// Submission is an approval_required event from an agent.
type Submission struct {
	Profile    policy.Profile // the agent (Profile.Agent is its id)
	CallID     string
	Capability string
	Target     string
	Autonomy   policy.Level // 0 = the agent's ceiling
	Channel    string
	SenderID   string
	// SessionID is the agent's session (Claude Code's, Codex's, Gemini
	// CLI's session id), if it has one: see AllowSession.
	SessionID string
	Intent    string
	Executor  string
	Summary   string
	Args      map[string]any
	Context   map[string]any // for vaglio; not stored
	// Ask, when set, makes the request need a person whatever rules and
	// grants say (policy.Input.Ask); the reason is shown.
	Ask         string
	GrantTarget string
	Timeout     time.Duration // 0 = the default
	CallbackURL string
	Notify      []string
	// TokenID and TokenName name the child token the agent used, if any.
	TokenID   string
	TokenName string
	// Admit, when set, is asked before a request is created (a repeated
	// call_id returns the existing request and takes nothing): the rate
	// limit lives here. Its error refuses the submission as is, unless the
	// call_id turns out to repeat an earlier one.
	Admit func() error
	// Refund, when set, gives back what a successful Admit took. With it,
	// Submit asks Admit before it knows whether the call_id is new (and
	// calls Refund when it was not, or nothing was created); without it,
	// Submit looks the call_id up first, which costs every new call a read.
	Refund func()
	// MaxPending, when positive, caps the agent's pending requests: a
	// request that would wait for a person past it is refused with
	// ErrTooManyPending (one that policy decides at once is not counted).
	MaxPending int
}

func newID() string {
	return newIDAt(time.Now())
}

// sortedBase32 is the base32 alphabet of request ids in ASCII order, so
// that a number written with it sorts as the number does.
const sortedBase32 = "234567abcdefghijklmnopqrstuvwxyz"

// newIDAt is "r", the time in milliseconds as 10 characters that sort as
// the time does, and 80 random bits as 16 lower-case base32 characters.
// The random part makes ids unguessable; the time part makes new ids sort
// after old ones, so inserting one touches the last page of each index on
// the id instead of a random page (fewer pages written per commit).
func newIDAt(t time.Time) string {
	var b [27]byte
	b[0] = 'r'
	ms := uint64(t.UnixMilli())
	for i := 10; i >= 1; i-- {
		b[i] = sortedBase32[ms&31]
		ms >>= 5
	}
	var rnd [10]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	base32.StdEncoding.WithPadding(base32.NoPadding).Encode(b[11:], rnd[:])
	for i := 11; i < len(b); i++ {
		if b[i] >= 'A' && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b[:])
}

func invalidf(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// ClampTimeout applies the default and the bounds of SPEC §5.
func (s *Service) ClampTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		d = s.opts.DefaultTimeout
	}
	return min(max(d, MinTimeout), MaxTimeout)
}

// Submit decides a request: at once when policy can, else as a pending
// request with cards on the agent's messengers. The same agent submitting
// the same call_id again gets the same request back (created false).
func (s *Service) Submit(ctx context.Context, sub Submission) (Request, bool, error) {
	if len(sub.CallID) > MaxCallIDBytes {
		return Request{}, false, invalidf("call_id", "over %d bytes", MaxCallIDBytes)
	}
	agent := sub.Profile.Agent
	// The reads below are short; a context that can be cancelled costs
	// each of them two goroutines (the driver's and database/sql's
	// watchers), more than the read itself.
	qctx := context.WithoutCancel(ctx)
	// Most call_ids are new. When what Admit takes can be given back
	// (Refund), the call_id is not looked up first: the insert finds a
	// repeat (ON CONFLICT), and Refund gives the token back. Otherwise a
	// repeat is found before Admit runs, as it must take nothing.
	lookupLater := sub.CallID != "" && sub.Admit != nil && sub.Refund != nil
	if sub.CallID != "" && !s.profileAdmits(sub) {
		// The caller's own profile refuses it: decided (denied) afresh,
		// never answered from an earlier request, whatever its call_id.
		lookupLater = false
	} else if sub.CallID != "" && !lookupLater {
		if r, found, err := s.earlier(qctx, sub); found || err != nil {
			return r, false, err
		}
	}
	// refuse answers a submission that creates nothing: a repeat of an
	// earlier call_id after all (whatever the rate), else err.
	admitted := false
	refuse := func(err error) (Request, bool, error) {
		if admitted {
			sub.Refund()
		}
		if lookupLater {
			if r, found, lerr := s.earlier(qctx, sub); found || lerr != nil {
				return r, false, lerr
			}
		}
		return Request{}, false, err
	}
	if sub.Admit != nil {
		if err := sub.Admit(); err != nil {
			return refuse(err)
		}
		admitted = lookupLater
	}
	start := s.now()
	dec, err := s.decider.Decide(qctx, policy.Input{
		Profile: sub.Profile, Capability: sub.Capability, Target: sub.Target, Requested: sub.Autonomy,
		Channel: sub.Channel, SenderID: sub.SenderID, SessionID: sub.SessionID, Intent: sub.Intent, Executor: sub.Executor, Args: sub.Args,
		Context: sub.Context, Ask: sub.Ask,
	})
	if err != nil {
		var fe *policy.FieldError
		if errors.As(err, &fe) {
			// Keep fe in the chain: the API's error code names its field.
			return refuse(fmt.Errorf("%w: %w", ErrInvalid, fe))
		}
		return refuse(err)
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	r := Request{
		ID: newID(), CallID: sub.CallID, Agent: agent, Outcome: dec.Outcome, Reason: dec.Reason,
		Vaglio: dec.Vaglio, Capability: dec.Capability.Name, Critical: dec.Capability.Critical, Target: sub.Target,
		Autonomy: dec.Autonomy, Channel: sub.Channel, SenderID: sub.SenderID, SessionID: sub.SessionID, Intent: sub.Intent,
		Executor: sub.Executor, Summary: sub.Summary, ArgKeys: argKeys(sub.Args), Trace: dec.Trace,
		CreatedAt: now, CallbackURL: sub.CallbackURL, TokenID: sub.TokenID, TokenName: sub.TokenName,
	}
	if r.CallID == "" {
		r.CallID = r.ID
	}
	if by := dec.BlockedBy; by != "" {
		r.BlockedBy = &by
	}
	if g := dec.GrantID; g != 0 {
		r.GrantID = &g
	}
	r.GrantTarget, _ = s.grants.Normalizer().GrantTarget(dec.Capability.TargetKind, sub.Target, sub.GrantTarget)
	var notices []noticeRow // [[policy.notify]] deliveries of an allowed request
	switch dec.Outcome {
	case policy.ApprovalRequired:
		if err := s.underPendingCap(qctx, agent, sub.MaxPending); err != nil {
			return refuse(err)
		}
		r.Status = StatusPending
		r.ExpiresAt = now.Add(s.ClampTimeout(sub.Timeout))
		s.applyRoute(&r, sub.Notify)
		s.offers(&r, dec.Capability.TargetKind, sub.Target, sub.GrantTarget)
		if s.opts.GrantTTL > 0 && r.AllowAlwaysOffered() {
			t := now.Add(s.opts.GrantTTL)
			r.GrantExpiresAt = &t
		}
	case policy.Allowed:
		r.Quorum = 1
		r.Status, r.DecidedBy, r.DecidedAt, r.ExpiresAt = StatusAllowed, "policy", &now, now
		if s.opts.Notify != nil {
			notices = s.matchNotify(dec.Capability, sub)
		}
	default:
		r.Quorum = 1
		r.Status, r.DecidedBy, r.DecidedAt, r.ExpiresAt = StatusDenied, "policy", &now, now
	}
	r.Approvals = []Approval{}
	r.traceJSON = encodeTrace(r.Trace) // for the row and, again, for the answer
	// Everything the transaction writes is encoded before it: the group
	// commit's writer holds the write lock while it runs.
	row := requestRow(r)
	// The detail's keys in order; a child token's request says which one.
	detail := []string{"agent", agent, "call_id", r.CallID, "capability", r.Capability, "outcome", string(r.Outcome),
		"reason", r.Reason, "status", string(r.Status)}
	if r.TokenID != "" {
		detail = append(detail, "token_id", r.TokenID)
	}
	audit, err := storage.PrepareAuditStrings(storage.AuditEvent{
		At: now, Actor: "agent:" + agent, Event: storage.AuditOutcome, RequestID: r.ID,
	}, detail...)
	if err != nil {
		return Request{}, false, fmt.Errorf("submit: %w", err)
	}
	var inserted bool
	// Group commit: the submissions arriving while the previous commit runs
	// share one transaction, and each is answered only after the commit
	// that holds its row and audit row. The writer runs fn on behalf of the
	// whole group, under qctx: one caller's hanging up must not interrupt
	// the statements of the others.
	// fn names what it needs of r, not r: a closure over r (which GroupTx
	// keeps) moved every Request to the heap.
	id, notify, pending := r.ID, r.Notify, r.Status == StatusPending
	err = s.db.GroupTx(ctx, func(sqltx *sql.Tx) error {
		tx := s.db.Tx(sqltx)
		var err error
		if inserted, err = insertRequestRow(qctx, tx, row); err != nil || !inserted {
			return err
		}
		for _, n := range notify {
			if _, err := tx.ExecContext(qctx, `INSERT INTO cards (request_id, channel, next_at) VALUES ($1, $2, $3)`,
				id, n, storage.FormatTime(now)); err != nil {
				return fmt.Errorf("insert card: %w", err)
			}
		}
		if pending {
			// Other replicas' SSE streams and the leader's dispatchers
			// hear of it at commit (a decided-now request has no watchers).
			if err := s.db.Notify(qctx, tx, noticeRequest+id); err != nil {
				return err
			}
		}
		if len(notices) > 0 {
			if err := s.insertNotifications(qctx, tx, id, notices, storage.FormatTime(now)); err != nil {
				return err
			}
		}
		return storage.AppendPrepared(qctx, tx, audit)
	})
	if err != nil {
		return refuse(fmt.Errorf("submit: %w", err))
	}
	if !inserted { // an earlier (or concurrent) submission has this call_id
		if admitted {
			sub.Refund()
		}
		if !s.profileAdmits(sub) {
			// Its profile refuses what the earlier request was for (a
			// changed config): the earlier answer is not given again.
			return Request{}, false, invalidf("call_id", "%q names an earlier request that this caller's profile does not permit", sub.CallID)
		}
		existing, err := getByCallID(qctx, s.db, agent, sub.TokenID, sub.CallID)
		if err != nil {
			return Request{}, false, err
		}
		return s.repeated(sub, existing)
	}
	s.opts.Observer.Outcome(r.Capability, r.Outcome, r.Status)
	// Plain strings: the named string types went through json.Marshal in
	// the JSON handler, on every request.
	s.log.LogAttrs(qctx, slog.LevelInfo, "request", slog.String("request_id", r.ID), slog.String("agent", agent),
		slog.String("capability", r.Capability), slog.String("outcome", string(r.Outcome)),
		slog.String("status", string(r.Status)))
	if r.Status == StatusPending {
		s.hub.publish(Event{Kind: EventRequired, Request: r})
		s.wakeAll(r.Notify)
		if r.EscalateAfter > 0 || r.RemindEvery > 0 {
			s.wakeTimers()
		}
	} else {
		s.opts.Observer.Decided(r.Status, s.now().Sub(start))
		s.callbacks.send(r)
		for _, n := range notices {
			s.wakeAnnouncer(n.delivery)
		}
	}
	return r, true, nil
}

// profileAdmits says whether the caller's own profile (a child token's
// narrowed one) lets sub's capability and target through at all. A
// submission it refuses is decided again, and so denied, even when its
// call_id repeats an earlier one.
func (s *Service) profileAdmits(sub Submission) bool {
	c, err := policy.Lookup(sub.Capability)
	if err != nil {
		return false
	}
	return sub.Profile.Permits(c.Name) && sub.Profile.PermitsTarget(s.grants.Normalizer(), c, sub.Target)
}

// earlier answers sub from the agent's earlier request under its call_id,
// if there is one (found): that request, or a *CallIDConflictError when
// sub asks for something else (see repeated).
func (s *Service) earlier(ctx context.Context, sub Submission) (r Request, found bool, err error) {
	// Asking first whether it is taken is a fraction of the cost of
	// reading the whole request.
	taken, err := callIDTaken(ctx, s.db, sub.Profile.Agent, sub.TokenID, sub.CallID)
	if err != nil || !taken {
		return Request{}, false, err
	}
	prev, err := getByCallID(ctx, s.db, sub.Profile.Agent, sub.TokenID, sub.CallID)
	if errors.Is(err, ErrNotFound) {
		return Request{}, false, nil
	}
	if err != nil {
		return Request{}, false, err
	}
	r, _, err = s.repeated(sub, prev)
	return r, true, err
}

// repeated answers a submission whose call_id names the existing request
// r: r itself when the submission asks for the same thing, else a
// *CallIDConflictError (nothing stored, no card). Intent, executor,
// summary, timeout and callback may differ on a retry (an agent may
// reword them); what is asked for and on whose behalf may not.
func (s *Service) repeated(sub Submission, r Request) (Request, bool, error) {
	if diff := s.callDiff(sub, r); len(diff) > 0 {
		s.log.Warn("call_id conflict", "agent", r.Agent, "request_id", r.ID, "fields", strings.Join(diff, ","))
		return Request{}, false, &CallIDConflictError{CallID: sub.CallID, Earlier: r, Fields: diff}
	}
	return r, false, nil
}

// callDiff lists the fields in which sub asks for something else than r
// did: capability, target, grant_target (what Allow always would grant),
// autonomy (effective), channel, sender_id, session_id and the set of arg
// keys.
func (s *Service) callDiff(sub Submission, r Request) []string {
	var diff []string
	add := func(differs bool, field string) {
		if differs {
			diff = append(diff, field)
		}
	}
	c, err := policy.Lookup(sub.Capability)
	add(err != nil || c.Name != r.Capability, "capability")
	add(sub.Target != r.Target, "target")
	if err == nil {
		gt, _ := s.grants.Normalizer().GrantTarget(c.TargetKind, sub.Target, sub.GrantTarget)
		add(gt != r.GrantTarget, "grant_target")
	}
	level := sub.Profile.Ceiling
	if sub.Autonomy != 0 {
		level = policy.MinLevel(sub.Autonomy, sub.Profile.Ceiling)
	}
	add(level != r.Autonomy, "autonomy")
	add(sub.Channel != r.Channel, "channel")
	add(sub.SenderID != r.SenderID, "sender_id")
	add(sub.SessionID != r.SessionID, "session_id")
	add(!slices.Equal(argKeys(sub.Args), r.ArgKeys), "arg_keys")
	return diff
}

func argKeys(args map[string]any) []string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Get returns a request.
func (s *Service) Get(ctx context.Context, id string) (Request, error) {
	return getRequest(ctx, s.db, id)
}

// Wait returns the request once it is finished or d has passed, whichever
// comes first. It is woken by the commit itself, not by polling.
func (s *Service) Wait(ctx context.Context, id string, d time.Duration) (Request, error) {
	ch, cancel := s.hub.wait(id)
	defer cancel()
	r, err := s.Get(ctx, id)
	if err != nil || r.Status.Finished() || d <= 0 {
		return r, err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case done := <-ch:
		return done, nil // as committed: no need to read it again
	case <-t.C:
	case <-ctx.Done():
		return r, ctx.Err()
	}
	return s.Get(ctx, id)
}

// Subscribe streams events of one agent's requests ("" = every agent's).
// The channel closes when ctx ends or the subscriber falls too far behind
// (an SSE client then reconnects and re-reads).
func (s *Service) Subscribe(ctx context.Context, agent string) <-chan Event {
	return s.hub.subscribe(ctx, agent)
}

// Decide records a person's decision. Only the request's approvers may
// decide (its route's, else the channel's own: ErrNotApprover). With a
// quorum of one the first decision wins: a later one gets an
// *AlreadyDecidedError naming who decided. With a larger quorum each
// distinct approver's allow is counted once (again: *AlreadyCountedError)
// and the request stays pending, the returned request showing the
// progress, until the quorum is reached; any deny denies at once. The
// decision that finishes the request writes its grant (Allow always, only
// when every counted allow was Allow always) in the same transaction.
func (s *Service) Decide(ctx context.Context, id string, d Decision, by Actor) (Request, error) {
	return s.DecideChoice(ctx, id, Choice{Decision: d}, by)
}

// DecideChoice is Decide with what the decision grants: the scope of
// Allow always, the while of Allow for. A choice the request's card did
// not offer is refused (ErrNotOffered, ErrAllowAlwaysRefused) and decides
// nothing: a tap forged or replayed from another card must not widen a
// grant.
func (s *Service) DecideChoice(ctx context.Context, id string, ch Choice, by Actor) (Request, error) {
	d := ch.Decision
	if _, err := ParseDecision(string(d)); err != nil {
		return Request{}, err
	}
	// Who may decide is fixed when the request is created, so it is checked
	// before the transaction: a group lookup may call out to a messenger.
	cur, err := getRequest(ctx, s.db, id)
	if err != nil {
		return Request{}, fmt.Errorf("decide request %s: %w", id, err)
	}
	if !cur.Status.Finished() {
		if err := s.authorize(ctx, cur, by); err != nil {
			return Request{}, fmt.Errorf("decide request %s: %w", id, err)
		}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var r Request
	var expired, progress bool
	err = s.db.InTx(ctx, func(sqltx *sql.Tx) error {
		tx := s.db.Tx(sqltx)
		// A concurrent approval (another replica, another channel) changes
		// rev between our read and our write: read again and recount. Each
		// round either writes or sees someone else's commit, so it ends.
		for attempt := 0; ; attempt++ {
			var err error
			if r, err = getRequest(ctx, tx, id); err != nil {
				return err
			}
			if r.Status.Finished() {
				return &AlreadyDecidedError{Request: r}
			}
			if !now.Before(r.ExpiresAt) {
				// Commit the expiry (not an error: that would roll it back),
				// then tell the caller it came too late.
				if err := s.finishTx(ctx, tx, &r, StatusExpired, nil, "timeout", now, storage.AuditExpired, nil); err != nil {
					return err
				}
				expired = true
				return nil
			}
			scope, ttl, err := s.resolve(&r, ch)
			if err != nil {
				return err
			}
			if d != Deny && r.Counted(by.Identity()) {
				return &AlreadyCountedError{Request: r}
			}
			a := Approval{By: by.String(), Approver: by.Identity(), Decision: d, Channel: by.Channel, At: now}
			switch d {
			case AllowAlways:
				a.Scope = scope
			case AllowFor:
				a.For = FormatWhile(ttl)
			}
			if d == Deny || max(r.Quorum, 1) <= 1 {
				return s.decideTx(ctx, tx, &r, a, now)
			}
			ok, err := s.countTx(ctx, tx, &r, a, now)
			if err != nil {
				return err
			}
			if !ok {
				if attempt >= maxCountAttempts {
					return fmt.Errorf("approval not counted after %d attempts: too much contention", attempt+1)
				}
				continue
			}
			if r.AllowCount() < r.Quorum {
				progress = true
				return s.db.Notify(ctx, tx, noticeProgress+r.ID)
			}
			return s.decideTx(ctx, tx, &r, quorumApproval(r.Approvals, a, r.Scopes), now)
		}
	})
	if err != nil {
		return Request{}, fmt.Errorf("decide request %s: %w", id, err)
	}
	if expired {
		s.finished(r)
		return Request{}, fmt.Errorf("decide request %s: %w", id, &AlreadyDecidedError{Request: r})
	}
	if progress {
		s.progressed(r)
		s.log.Info("approval counted", "request_id", r.ID, "agent", r.Agent, "capability", r.Capability,
			"decision", d, "by", by.String(), "approvals", r.AllowCount(), "quorum", r.Quorum)
		return r, nil
	}
	s.finished(r)
	decision := "" // the value, not the pointer (a text log printed its address)
	if r.Decision != nil {
		decision = string(*r.Decision)
	}
	s.log.Info("decision", "request_id", r.ID, "agent", r.Agent, "capability", r.Capability,
		"decision", decision, "decided_by", r.DecidedBy)
	return r, nil
}

// maxCountAttempts bounds the recounts of one approval under contention.
const maxCountAttempts = 50

// countTx counts approval a on the pending request r, conditionally on r
// being unchanged since it was read (rev): false means someone else
// changed it first and the caller must read it again. On success r holds
// the new approvals, the request's cards are due for an edit (the
// progress), and the approval has its audit row.
func (s *Service) countTx(ctx context.Context, tx storage.Querier, r *Request, a Approval, now time.Time) (bool, error) {
	next := append(append([]Approval(nil), r.Approvals...), a)
	js, _ := json.Marshal(next)
	res, err := tx.ExecContext(ctx, `UPDATE requests SET approvals = $1, rev = rev + 1
		WHERE id = $2 AND status = 'pending' AND rev = $3`, string(js), r.ID, r.Rev)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	r.Approvals, r.Rev = next, r.Rev+1
	if _, err := tx.ExecContext(ctx, `UPDATE cards SET next_at = $1, attempts = 0 WHERE request_id = $2`,
		storage.FormatTime(now), r.ID); err != nil {
		return false, err
	}
	err = storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: a.By, Event: storage.AuditApproval,
		RequestID: r.ID, Detail: map[string]any{"decision": string(a.Decision), "approver": a.Approver,
			"channel": a.Channel, "approvals": r.AllowCount(), "quorum": r.Quorum, "capability": r.Capability}})
	return err == nil, err
}

// decideTx finishes the pending request r with the decision of a (for a
// quorum, what every counted approval agreed on: quorumApproval): Allow
// always and Allow for write their grant, on the chosen scope, granted by
// every approver counted.
func (s *Service) decideTx(ctx context.Context, tx storage.Querier, r *Request, a Approval, now time.Time) error {
	d := a.Decision
	status := StatusAllowed
	if d == Deny {
		status = StatusDenied
	}
	if d == Deny || max(r.Quorum, 1) <= 1 {
		r.Approvals = append(r.Approvals, a)
	} // else countTx already added a
	if d.WritesGrant() {
		target, ttl, session := a.Scope, s.opts.GrantTTL, policy.Session{}
		switch d {
		case AllowFor:
			target = r.GrantTarget
			var err error
			if ttl, err = ParseWhile(a.For); err != nil {
				return err
			}
		case AllowSession:
			target, ttl, session = r.GrantTarget, s.opts.SessionTTL, policy.Session{Agent: r.Agent, ID: r.SessionID}
		}
		g, err := s.grants.RecordTx(ctx, tx, policy.NewGrant{
			Principal:  policy.Principal{Channel: r.Channel, SenderID: r.SenderID},
			Capability: r.Capability, Target: target, GrantedBy: grantedBy(r.Approvals), TTL: ttl,
			RequestID: r.ID, Session: session,
		})
		if err != nil {
			return err
		}
		r.GrantID, r.GrantExpiresAt = &g.ID, g.ExpiresAt
	}
	var extra map[string]any
	if r.Quorum > 1 {
		extra = map[string]any{"approvals": r.AllowCount(), "quorum": r.Quorum}
	}
	return s.finishTx(ctx, tx, r, status, &d, a.By, now, storage.AuditDecision, extra)
}

// grantedBy names every approver whose allow wrote a grant.
func grantedBy(as []Approval) string {
	var names []string
	for _, a := range as {
		if a.Decision != Deny {
			names = append(names, a.By)
		}
	}
	return strings.Join(names, ", ")
}

// Cancel withdraws a pending request on behalf of its agent.
func (s *Service) Cancel(ctx context.Context, id, agent, tokenID string) (Request, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	var r Request
	err := s.db.InTx(ctx, func(sqltx *sql.Tx) error {
		tx := s.db.Tx(sqltx)
		var err error
		if r, err = getRequest(ctx, tx, id); err != nil {
			return err
		}
		if r.Status.Finished() {
			return &AlreadyDecidedError{Request: r}
		}
		var extra map[string]any
		if tokenID != "" {
			extra = map[string]any{"token_id": tokenID} // on whose behalf: a child token
		}
		return s.finishTx(ctx, tx, &r, StatusCancelled, nil, "agent:"+agent, now, storage.AuditCancelled, extra)
	})
	if err != nil {
		return Request{}, fmt.Errorf("cancel request %s: %w", id, err)
	}
	s.finished(r)
	return r, nil
}

const finishRequest = `UPDATE requests SET status = $1, decision = $2, decided_by = $3, decided_at = $4, grant_id = $5,
grant_expires_at = COALESCE($7, grant_expires_at), approvals = COALESCE($8, approvals), rev = rev + 1,
escalate_at = NULL, remind_at = NULL WHERE id = $6 AND status = 'pending'`

// finishTx moves a pending request to a final status inside tx, with its
// audit row, and marks its cards for an edit. Zero rows changed means
// another writer finished it first.
func (s *Service) finishTx(ctx context.Context, tx storage.Querier, r *Request, st Status, d *Decision, by string,
	now time.Time, event string, extra map[string]any) error {
	var approvals any
	if d != nil {
		js, _ := json.Marshal(nonNilApprovals(r.Approvals))
		approvals = string(js)
	}
	res, err := tx.ExecContext(ctx, finishRequest, string(st), nullDecision(d), by, storage.FormatTime(now),
		nullInt(r.GrantID), r.ID, grantExpiry(r), approvals)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		cur, err := getRequest(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		return &AlreadyDecidedError{Request: cur}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cards SET next_at = $1, attempts = 0 WHERE request_id = $2`,
		storage.FormatTime(now), r.ID); err != nil {
		return err
	}
	detail := map[string]any{"status": string(st), "agent": r.Agent, "capability": r.Capability}
	if d != nil {
		detail["decision"] = string(*d)
	}
	if r.GrantID != nil {
		detail["grant_id"] = *r.GrantID
	}
	for k, v := range extra {
		detail[k] = v
	}
	if err := storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by, Event: event, RequestID: r.ID,
		Detail: detail}); err != nil {
		return err
	}
	// Replicas on the same database wake their waiters when this commits.
	if err := s.db.Notify(ctx, tx, noticeRequest+r.ID); err != nil {
		return err
	}
	r.Status, r.Decision, r.DecidedBy, r.DecidedAt = st, d, by, &now
	r.Rev++
	return nil
}

// progressed tells SSE streams and the card dispatchers that an approval
// was counted on r.
func (s *Service) progressed(r Request) {
	s.hub.publish(Event{Kind: EventProgress, Request: r})
	s.wakeAll(r.Notify)
}

// finished tells everyone who waits that r is final.
func (s *Service) finished(r Request) {
	s.opts.Observer.Decided(r.Status, r.DecidedAt.Sub(r.CreatedAt))
	s.hub.publish(Event{Kind: EventResolved, Request: r})
	s.wakeAll(r.Notify)
	s.callbacks.send(r)
}

// ExpireDue expires every pending request whose time is up and returns how
// many. Run at start-up (for requests that expired while the gateway was
// down) and every second after.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	now := s.now().UTC().Truncate(time.Microsecond)
	var done []Request
	err := s.db.InTx(ctx, func(sqltx *sql.Tx) error {
		tx := s.db.Tx(sqltx)
		due, err := listRequests(ctx, tx, `SELECT `+requestColumns+` FROM requests
			WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT 500`, storage.FormatTime(now))
		if err != nil {
			return err
		}
		for _, r := range due {
			err := s.finishTx(ctx, tx, &r, StatusExpired, nil, "timeout", now, storage.AuditExpired, nil)
			var already *AlreadyDecidedError
			if errors.As(err, &already) {
				continue // another replica's sweep, or a decision, finished it first
			}
			if err != nil {
				return err
			}
			done = append(done, r)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("expire: %w", err)
	}
	for _, r := range done {
		s.finished(r)
	}
	return len(done), nil
}

// SetNote attaches the owner's note to a request decided less than
// NoteWindow ago.
func (s *Service) SetNote(ctx context.Context, id, note string, by Actor) (Request, error) {
	now := s.now().UTC()
	var r Request
	err := s.db.InTx(ctx, func(sqltx *sql.Tx) error {
		tx := s.db.Tx(sqltx)
		var err error
		if r, err = getRequest(ctx, tx, id); err != nil {
			return err
		}
		if r.DecidedAt == nil || now.Sub(*r.DecidedAt) > NoteWindow {
			return fmt.Errorf("%w: note: only within %s of the decision", ErrInvalid, NoteWindow)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE requests SET note = $1 WHERE id = $2`, note, id); err != nil {
			return err
		}
		r.Note = note
		return storage.AppendAudit(ctx, tx, storage.AuditEvent{At: now, Actor: by.String(), Event: storage.AuditNote,
			RequestID: id})
	})
	if err != nil {
		return Request{}, fmt.Errorf("note on request %s: %w", id, err)
	}
	return r, nil
}

// ListPending returns pending requests, oldest first.
func (s *Service) ListPending(ctx context.Context, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, `SELECT `+requestColumns+` FROM requests WHERE status = 'pending'
		ORDER BY created_at LIMIT $1`, limit)
}

// CountPending counts pending requests (for the metrics gauge).
func (s *Service) CountPending(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM requests WHERE status = 'pending'`).Scan(&n)
	return n, err
}

// underPendingCap refuses a new pending request of agent when it has max
// pending already. The count and the insert are not one transaction: two
// submissions at once may both pass at max-1, so the cap bounds the queue
// a runaway agent builds, not its exact length.
func (s *Service) underPendingCap(ctx context.Context, agent string, max int) error {
	if max <= 0 {
		return nil
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM requests WHERE status = 'pending' AND agent = $1`, agent).Scan(&n); err != nil {
		return fmt.Errorf("count pending: %w", err)
	}
	if n >= max {
		return &TooManyPendingError{Agent: agent, Max: max}
	}
	return nil
}

// ListRecent returns finished requests, newest decision first.
func (s *Service) ListRecent(ctx context.Context, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, `SELECT `+requestColumns+` FROM requests WHERE status != 'pending'
		ORDER BY decided_at DESC LIMIT $1`, limit)
}

// Run starts the background work of a gateway running alone: one card
// dispatcher per messenger (RunDispatch), escalations and reminders
// (RunTimers) and the expiry sweep (RunSweep).
// It expires overdue requests first and returns when ctx ends, after
// in-flight sends and callbacks finish.
func (s *Service) Run(ctx context.Context) error {
	if _, err := s.ExpireDue(ctx); err != nil {
		return err
	}
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		s.RunDispatch(ctx)
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		s.RunTimers(ctx)
	}()
	err := s.RunSweep(ctx)
	<-done
	<-done
	return err
}

// RunSweep expires overdue requests now and every second after, until ctx
// ends; then it waits for the callbacks in flight. Every replica runs it:
// two sweeps finishing the same request are harmless (the first commit
// wins, the other skips it), and expiry does not wait for a leader. A pass
// that fails is logged (an outage once, see noteDB) and the next one
// tries again: RunSweep returns nil.
func (s *Service) RunSweep(ctx context.Context) error {
	// Like every later pass, the first one does not end the sweep when the
	// database is away (it once shut the gateway down when a replica's
	// database blinked just as it started): it is logged and retried.
	began := time.Now()
	_, err := s.ExpireDue(ctx)
	s.noteDB(ctx, began, err, "expiry sweep")
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.callbacks.wait()
			return nil
		case <-t.C:
			began := time.Now()
			_, err := s.ExpireDue(ctx)
			s.noteDB(ctx, began, err, "expiry sweep")
		}
	}
}

// RunDispatch runs one card dispatcher per messenger until ctx ends and
// their sends in flight finish. With several replicas only the leader runs
// it (see storage.DB.Lead), so a card is posted once; it may run again
// after it returned (a replica that leads again).
func (s *Service) RunDispatch(ctx context.Context) {
	s.dispatching.Add(1)
	defer s.dispatching.Add(-1)
	for name, n := range s.notifiers {
		s.goDispatch(ctx, s.cardRound(n), s.wake[name])
	}
	// Without patterns, the notification loops run only to finish what an
	// earlier config queued: no idle queries on a gateway that has none.
	var queued int
	if s.opts.Notify.Empty() {
		_ = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM notifications`).Scan(&queued)
	}
	for name, a := range s.announcers {
		if s.opts.Notify.Empty() && queued == 0 {
			break
		}
		s.goDispatch(ctx, func(ctx context.Context, recovering bool) round {
			return s.announceOnce(ctx, a, recovering)
		}, s.announceWake[name])
	}
	<-ctx.Done()
	s.wg.Wait()
}

// goDispatch runs one dispatcher loop (see dispatch), counted in s.wg.
func (s *Service) goDispatch(ctx context.Context, once func(context.Context, bool) round, wake <-chan struct{}) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.dispatch(ctx, once, wake)
	}()
}

// Notices between replicas on one database, sent with storage.DB.Notify
// in the transaction of the change and handled by Notice.
const (
	noticeRequest  = "req "   // + request id: created pending, or finished
	noticeCards    = "cards " // + messenger: cards reset for a fresh post
	noticeProgress = "prog "  // + request id: an approval counted, still pending
	// notifications of [[policy.notify]] were queued: the leader's
	// dispatchers look for them
	noticeNotifications = "notes"
	// + request id: its "web" notification was delivered; every replica's
	// admin streams publish it
	noticeWebNotification = "webnote "
)

// Notice handles a change notice from another replica on the same database
// (see storage.DB.Listen): it wakes this replica's long-polls, SSE streams
// and card dispatchers as if the change had been made here. The replica
// that made the change alone counts it in metrics and sends its callback.
// An empty notice says notices may have been missed (the listening
// session was reconnected): every waiter re-reads its request.
func (s *Service) Notice(ctx context.Context, msg string) {
	switch {
	case msg == "":
		for _, id := range s.hub.waiting() {
			if r, err := s.Get(ctx, id); err == nil && r.Status.Finished() {
				s.hub.publish(Event{Kind: EventResolved, Request: r})
			}
		}
		s.wakeAll(s.Notifiers())
		s.wakeAnnouncers()
	case strings.HasPrefix(msg, noticeRequest):
		id := strings.TrimPrefix(msg, noticeRequest)
		if s.dispatching.Load() == 0 && !s.hub.interested(id) {
			return
		}
		r, err := s.Get(ctx, id)
		if err != nil {
			return // deleted since (prune)
		}
		kind := EventRequired
		if r.Status.Finished() {
			kind = EventResolved
		} else if r.EscalateAfter > 0 || r.RemindEvery > 0 {
			s.wakeTimers()
		}
		s.hub.publish(Event{Kind: kind, Request: r})
		s.wakeAll(r.Notify)
	case strings.HasPrefix(msg, noticeProgress):
		id := strings.TrimPrefix(msg, noticeProgress)
		if s.dispatching.Load() == 0 && !s.hub.interested(id) {
			return
		}
		if r, err := s.Get(ctx, id); err == nil && !r.Status.Finished() {
			s.progressed(r)
		}
	case strings.HasPrefix(msg, noticeCards):
		s.wakeAll([]string{strings.TrimPrefix(msg, noticeCards)})
	case msg == noticeNotifications:
		s.wakeAnnouncers()
	case strings.HasPrefix(msg, noticeWebNotification):
		if r, err := s.Get(ctx, strings.TrimPrefix(msg, noticeWebNotification)); err == nil {
			s.hub.publish(Event{Kind: EventNotification, Request: r})
		}
	}
}

func (s *Service) wakeAnnouncers() {
	for name := range s.announceWake {
		s.wakeAnnouncer(name)
	}
}

func (s *Service) wakeAnnouncer(delivery string) {
	if ch := s.announceWake[delivery]; ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (s *Service) wakeAll(channels []string) {
	for _, n := range channels {
		if ch := s.wake[n]; ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Resend marks the cards of every pending request on one messenger for a
// fresh post (Telegram /pending): their old messages stay, new ones come.
func (s *Service) Resend(ctx context.Context, channel string) (int, error) {
	if s.notifiers[channel] == nil {
		return 0, fmt.Errorf("%w: channel: %q is not configured", ErrInvalid, channel)
	}
	now := storage.FormatTime(s.now())
	res, err := s.db.ExecContext(ctx, `INSERT INTO cards (request_id, channel, next_at)
		SELECT id, $1, $2 FROM requests WHERE status = 'pending'
		ON CONFLICT (request_id, channel) DO UPDATE SET ref = NULL, shown_status = NULL, next_at = $2, attempts = 0,
		gen = cards.gen + 1`,
		channel, now)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	s.wakeAll([]string{channel})
	if err := s.db.Notify(ctx, s.db, noticeCards+channel); err != nil {
		s.log.Warn("resend: the other replicas were not told; the leader's dispatcher finds the cards within seconds",
			"channel", channel, "err", err)
	}
	return int(n), nil
}

// CardRef returns the message reference of a request's card on a channel.
func (s *Service) CardRef(ctx context.Context, id, channel string) (string, error) {
	var ref sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT ref FROM cards WHERE request_id = $1 AND channel = $2`, id, channel).Scan(&ref)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !ref.Valid {
		return "", ErrNotFound
	}
	return ref.String, err
}

// RequestByCardRef finds the request whose card on channel has ref (a
// reply to a Telegram message names only the message).
func (s *Service) RequestByCardRef(ctx context.Context, channel, ref string) (Request, error) {
	var id string
	err := s.db.QueryRowContext(ctx, `SELECT request_id FROM cards WHERE channel = $1 AND ref = $2`, channel, ref).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Request{}, ErrNotFound
	}
	if err != nil {
		return Request{}, err
	}
	return s.Get(ctx, id)
}

type nopObserver struct{}

func (nopObserver) Outcome(string, policy.Outcome, Status) {}
func (nopObserver) Decided(Status, time.Duration)          {}
func (nopObserver) SendFailed(string)                      {}

// grantExpiry is the expiry of the grant an Allow always just wrote (nil
// for other decisions: the stored preview stays).
func grantExpiry(r *Request) any {
	if r.GrantID == nil {
		return nil
	}
	return nullTime(r.GrantExpiresAt)
}

// Since lists the requests created at or after since, oldest first, at
// most limit (for replays such as POST /v1/policy/simulate).
func (s *Service) Since(ctx context.Context, since time.Time, limit int) ([]Request, error) {
	return listRequests(ctx, s.db, `SELECT `+requestColumns+` FROM requests WHERE created_at >= $1
		ORDER BY created_at, id LIMIT $2`, storage.FormatTime(since), limit)
}
