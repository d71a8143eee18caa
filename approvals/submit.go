package approvals

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// The statements of this file.
const (
	insertCard = `INSERT INTO cards (request_id, channel, next_at) VALUES ($1, $2, $3)`
)

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

// afterRow writes what follows a request's row in its transaction: its
// notices, then its audit row. A function, not a closure made for every
// submission: a decided-now request without notices never calls it.
func (s *Service) afterRow(ctx context.Context, tx storage.Querier, id string, notices []noticeRow, now time.Time, audit storage.AuditRecord) error {
	if len(notices) > 0 {
		if err := s.insertNotifications(ctx, tx, id, notices, storage.FormatTime(now)); err != nil {
			return err
		}
	}
	return storage.AppendPrepared(ctx, tx, audit)
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
	return s.submit(ctx, sub, new(storage.Basis))
}

// submit is Submit, whose decision may be made on basis (see
// storage.Basis; nil: behind the read barrier). A request decided at once
// on a pinned basis is stored only if the grants and rules did not change
// since; else it is submitted again, decided behind the barrier, with
// what Admit took kept for it.
func (s *Service) submit(ctx context.Context, sub Submission, basis *storage.Basis) (Request, bool, error) {
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
	dec, basis, err := s.decide(qctx, sub, basis)
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
		if err := underPendingCap(qctx, s.db, agent, sub.MaxPending); err != nil {
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
	r.encoded = encodeJSON(&r) // for the row and, again, for the answer
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
	// Nor over sub: that moved every Submission to the heap.
	id, notify, pending, maxPending := r.ID, r.Notify, r.Status == StatusPending, sub.MaxPending
	// A traced request keeps its trace while it waits (see keepTrace);
	// untraced (telemetry off), this is "" and nothing is written.
	traceparent := ""
	if pending {
		traceparent = telemetry.Traceparent(ctx)
	}
	gctx, commit := telemetry.Start(ctx, "store")
	switch {
	case !pending && len(notices) == 0:
		// Decided now: the row's insert is the group's to send, with the
		// other calls' (one round trip for the group on PostgreSQL), and
		// then its audit row if the call_id was new.
		err = s.db.GroupExecAudit(gctx, basis, row.query, row.args, func(n int64) (storage.AuditRecord, bool) {
			inserted = n == 1
			return audit, inserted
		})
	case !pending:
		err = s.db.GroupExec(gctx, basis, row.query, row.args, func(tx storage.Querier, n int64) error {
			if inserted = n == 1; !inserted {
				return nil
			}
			return s.afterRow(qctx, tx, id, notices, now, audit)
		})
	default:
		err = s.db.GroupTx(gctx, func(tx storage.Querier) error {
			// Counted again in the writing transaction: concurrent
			// submissions passed the count above together, and writes
			// take turns here (every replica's: CapLock), so the cap
			// holds. One key for every agent: transactions that hold
			// several agents' submissions never lock in two orders.
			if err := s.db.CapLock(qctx, tx, "max_pending"); err != nil {
				return err
			}
			if err := underPendingCap(qctx, tx, agent, maxPending); err != nil {
				return err
			}
			var err error
			if inserted, err = insertRequestRow(qctx, tx, row); err != nil || !inserted {
				return err
			}
			if traceparent != "" {
				if err := keepTrace(qctx, tx, id, traceparent); err != nil {
					return fmt.Errorf("keep trace: %w", err)
				}
			}
			for _, n := range notify {
				if _, err := tx.ExecContext(qctx, insertCard,
					id, n, storage.FormatTime(now)); err != nil {
					return fmt.Errorf("insert card: %w", err)
				}
			}
			// Other replicas' SSE streams and the leader's dispatchers
			// hear of it at commit (a decided-now request has no watchers).
			if err := s.db.Notify(qctx, tx, noticeRequest+id); err != nil {
				return err
			}
			return s.afterRow(qctx, tx, id, notices, now, audit)
		})
	}
	commit.End()
	if errors.Is(err, storage.ErrStaleBasis) && basis.Pinned() {
		// Decided on versions that moved: nothing was stored. Once more,
		// behind the barrier; what Admit took stands for it.
		sub.Admit = admittedOnce
		return s.submit(ctx, sub, nil)
	}
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
		if r.CallbackURL != "" {
			s.callbacks.send(r, telemetry.Traceparent(ctx))
		}
		for _, n := range notices {
			s.wakeAnnouncer(n.delivery)
		}
	}
	return r, true, nil
}

// decide asks policy about sub, first on basis (see submit). A decision
// that needs a person, or that failed, is made again behind the read
// barrier, and its basis is then nil: only a request decided at once is
// stored with the check.
func (s *Service) decide(ctx context.Context, sub Submission, basis *storage.Basis) (policy.Decision, *storage.Basis, error) {
	in := policy.Input{
		Profile: sub.Profile, Capability: sub.Capability, Target: sub.Target, Requested: sub.Autonomy,
		Channel: sub.Channel, SenderID: sub.SenderID, SessionID: sub.SessionID, Intent: sub.Intent, Executor: sub.Executor, Args: sub.Args,
		Context: sub.Context, Ask: sub.Ask, Guard: s.GuardOf(sub.Profile.Agent, sub.Capability), Basis: basis,
	}
	dec, err := s.decider.Decide(ctx, in)
	if basis.Pinned() && (err != nil || dec.Outcome == policy.ApprovalRequired) {
		in.Basis = nil
		dec, err = s.decider.Decide(ctx, in)
		return dec, nil, err
	}
	return dec, basis, err
}

// admittedOnce is a resubmission's Admit: the first submission's Admit
// took what it takes.
func admittedOnce() error { return nil }

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
