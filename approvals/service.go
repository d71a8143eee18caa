package approvals

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// The statements of this file.
const countPendingOf = `SELECT COUNT(*) FROM requests WHERE status = 'pending' AND agent = $1`

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
	// Telemetry traces each request's life (nil: off).
	Telemetry *telemetry.Provider
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
	// PolicyStepUp is [web] policy_step_up = "passkey": every grant
	// change is an admin's passkey assertion on the web page, so a chat
	// revokes none (RevokeGrant: ErrPolicyStepUp).
	PolicyStepUp bool
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
	s.callbacks = newCallbacker(opts.CallbackKey, opts.CallbackAllowed, opts.CallbackResolver, opts.Logger,
		opts.Telemetry)
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

// decideChoice is DecideChoice, untraced.
func (s *Service) decideChoice(ctx context.Context, id string, ch Choice, by Actor) (Request, error) {
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
	if by.Channel == ChannelAPI && by.ID == cur.Agent {
		// Child tokens act as their root agent: this refuses the token,
		// its ancestors and its descendants alike.
		return Request{}, fmt.Errorf("decide request %s: %w (agent %s)", id, ErrOwnRequest, by.ID)
	}
	if !cur.Status.Finished() {
		if err := s.authorize(ctx, cur, by); err != nil {
			return Request{}, fmt.Errorf("decide request %s: %w", id, err)
		}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var r Request
	var expired, progress bool
	err = s.db.InTx(ctx, func(tx storage.Querier) error {
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
			if err := checkStepUp(r, d, by, stepUpContent(r, d, scope, ttl, ch.EveryAgent)); err != nil {
				return err
			}
			a := Approval{By: by.String(), Approver: by.Identity(), Decision: d, Channel: by.Channel, At: now,
				EveryAgent: ch.EveryAgent}
			if by.Passkey.Valid() {
				a.Passkey, a.proof = by.Passkey.PasskeyName(), by.Passkey
			}
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

// underPendingCap refuses a new pending request of agent when it has max
// pending already, counted through q. Submit counts twice: once before
// deciding (cheap refusal), and again in the transaction that inserts,
// where writes take turns, so concurrent submissions cannot pass together.
func underPendingCap(ctx context.Context, q storage.Querier, agent string, max int) error {
	if max <= 0 {
		return nil
	}
	var n int
	if err := q.QueryRowContext(ctx, countPendingOf, agent).Scan(&n); err != nil {
		return fmt.Errorf("count pending: %w", err)
	}
	if n >= max {
		return &TooManyPendingError{Agent: agent, Max: max}
	}
	return nil
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

// goDispatch runs one dispatcher loop (see dispatch), counted in s.wg.
func (s *Service) goDispatch(ctx context.Context, once func(context.Context, bool) round, wake <-chan struct{}) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.dispatch(ctx, once, wake)
	}()
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

type nopObserver struct{}

func (nopObserver) Outcome(string, policy.Outcome, Status) {}
func (nopObserver) Decided(Status, time.Duration)          {}
func (nopObserver) SendFailed(string)                      {}
