package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/vaglio"
)

// errForeignPrincipal: a non-admin agent named a principal it may not act
// for, which would let it use that person's grants.
var errForeignPrincipal = errors.New("forbidden principal")

// errPolicyStepUp: [web] policy_step_up = "passkey" keeps the admin
// agent's API from adding approve rules and grants; an admin does it on
// the web page, with a passkey.
var errPolicyStepUp = errors.New("policy changes need an admin's passkey on the web page")

// requestBody is the JSON an agent posts to /v1/requests and /v1/check.
type requestBody struct {
	CallID      string         `json:"call_id"`
	Capability  string         `json:"capability"`
	Target      string         `json:"target"`
	Autonomy    string         `json:"autonomy"`
	Channel     string         `json:"channel"`
	SenderID    string         `json:"sender_id"`
	SessionID   string         `json:"session_id"` // the agent's session (Claude Code's, Codex's…): see allow_session
	Intent      string         `json:"intent"`
	Executor    string         `json:"executor"`
	Args        map[string]any `json:"args"`
	Context     map[string]any `json:"context"` // the vaglio seed's context: mode, step, critical, …
	Summary     string         `json:"summary"`
	GrantTarget string         `json:"grant_target"`
	TimeoutS    float64        `json:"timeout_s"`
	CallbackURL string         `json:"callback_url"`
}

// submission validates the body's own fields and fills the agent's defaults.
func (s *Server) submission(a *Agent, b requestBody) (approvals.Submission, error) {
	sub := agentSubmission(a)
	sub.CallID, sub.Capability, sub.Target = b.CallID, b.Capability, b.Target
	sub.Channel, sub.SenderID, sub.SessionID = b.Channel, b.SenderID, b.SessionID
	sub.Intent, sub.Executor, sub.Summary = b.Intent, b.Executor, b.Summary
	sub.Args, sub.Context, sub.GrantTarget, sub.CallbackURL = b.Args, b.Context, b.GrantTarget, b.CallbackURL
	if b.Autonomy != "" {
		l, err := policy.ParseLevel(b.Autonomy)
		if err != nil {
			return sub, &policy.FieldError{Field: "autonomy", Err: err}
		}
		sub.Autonomy = l
	}
	if err := principal(a, &sub); err != nil {
		return sub, err
	}
	if b.TimeoutS < 0 {
		return sub, &policy.FieldError{Field: "timeout_s", Err: errors.New("negative timeout")}
	}
	sub.Timeout = time.Duration(b.TimeoutS * float64(time.Second))
	if b.CallbackURL != "" {
		allowed, err := callbackurl.Check(a.Callbacks, b.CallbackURL)
		if err != nil {
			return sub, &policy.FieldError{Field: "callback_url", Err: err}
		}
		sub.CallbackURL = allowed.URL
	}
	if len(b.GrantTarget) > policy.MaxTargetBytes {
		return sub, &policy.FieldError{Field: "grant_target", Err: errors.New("too long")}
	}
	return sub, checkSessionID(b.SessionID)
}

// rateLimitError refuses a submission over the agent's rate: 429 with
// Retry-After for the API, "ask" with the reason for the hook.
type rateLimitError struct {
	agent, rate, capability string
	wait                    time.Duration
}

func (e *rateLimitError) Error() string {
	return fmt.Sprintf("agent %s is over its rate %s for %s; retry in %ds", e.agent, e.rate, e.capability, e.retrySeconds())
}

func (e *rateLimitError) retrySeconds() int { return max(int(e.wait.Seconds()+0.999), 1) }

// submit submits sub for agent a, with the agent's rate limit (and a child
// token's max_requests) as its Admit: a token from the agent's bucket for
// the capability, taken only when a request is really created. A refusal
// for the rate is counted and audited here, once Submit has found the
// call_id new (a repeat returns its request whatever the rate).
func (s *Server) submit(ctx context.Context, a *Agent, sub approvals.Submission) (approvals.Request, error) {
	var give func()
	capability := sub.Capability // not sub: a closure over it moved every Submission to the heap
	sub.Admit = func() error {
		wait, over, g := s.overRate(a, capability)
		if over {
			return &rateLimitError{agent: a.ID, rate: a.Rate, capability: capability, wait: wait}
		}
		give = g
		if a.Child != nil && s.tokens != nil {
			return s.tokens.Consume(ctx, a.Child) // its max_requests, and its ancestors'
		}
		return nil
	}
	// With Refund, a repeated call_id is found by the insert, after the
	// request was decided again: free with the rule-based judge, a model
	// call with the LLM one, which a retry must not cost. And a child's
	// count, unlike the rate's token, cannot be given back.
	llmJudge := s.cfg.Vaglio.JudgeKind == config.JudgeLLM
	if !llmJudge && (a.Child == nil || s.tokens == nil || a.Child.Profile.MaxRequests == nil) {
		sub.Refund = func() {
			if give != nil {
				give()
			}
		}
	}
	req, _, err := s.svc.Submit(ctx, sub)
	if err == nil {
		return req, nil
	}
	var limited *rateLimitError
	if errors.As(err, &limited) {
		s.metrics.rateLimited.WithLabelValues(a.ID, limited.capability).Inc()
		detail := map[string]any{"capability": limited.capability, "rate": a.Rate}
		if a.Child != nil {
			detail["token_id"] = a.Child.ID
		}
		_ = storage.AppendAudit(ctx, s.svc.DB(), storage.AuditEvent{
			At: s.now(), Actor: "agent:" + a.ID, Event: storage.AuditRateLimited, Detail: detail,
		})
	}
	return req, err
}

// overRate takes a token from the agent's bucket for capability; when
// there is none it says how long to wait. give gives the token back.
func (s *Server) overRate(a *Agent, capability string) (wait time.Duration, over bool, give func()) {
	if _, err := policy.Lookup(capability); err != nil {
		return 0, false, nil // validation answers 400 later
	}
	wait, ok, give := s.limiter.allow(a, capability)
	return wait, !ok, give
}

func (s *Server) createRequest(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	r, span := s.traced(r, "request", a)
	defer span.End()
	wait, err := parseWait(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_wait", err.Error())
		return
	}
	var b requestBody
	_, vspan := telemetry.Start(r.Context(), "validate")
	if !decodeJSON(w, r, &b) {
		vspan.End()
		return
	}
	if wait > 0 {
		release, ok := s.takeStream(w, r, a)
		if !ok {
			return
		}
		defer release()
	}
	sub, err := s.submission(a, b)
	vspan.End()
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	req, err := s.submit(r.Context(), a, sub)
	if err != nil {
		span.Fail("request refused")
		s.errorResponse(w, r, err)
		return
	}
	traceRequest(span, &req)
	s.answerRequest(w, r, req, wait)
}

// answerRequest waits up to wait for a pending request, then answers 200
// when it is finished and 202 while it is pending. A shutdown ends the
// wait with a 202, so a restart neither hangs on long-polls nor answers
// them 500 from a closed database; the client polls again.
func (s *Server) answerRequest(w http.ResponseWriter, r *http.Request, req approvals.Request, wait time.Duration) {
	if !req.Status.Finished() && wait > 0 {
		ctx, stop := s.untilShutdown(r.Context())
		ctx, revoked, stopWatch := s.untilTokenGone(ctx, agentFrom(r))
		got, err := s.svc.Wait(ctx, req.ID, wait)
		gone := revoked()
		stopWatch()
		stop()
		switch {
		case err == nil:
			req = got
		case gone:
			writeError(w, http.StatusUnauthorized, "token_revoked", "the token was revoked or has expired")
			return
		case r.Context().Err() == nil && ctx.Err() != nil: // shutting down: answer what we have
		default:
			s.errorResponse(w, r, err)
			return
		}
	}
	status := http.StatusOK
	if !req.Status.Finished() {
		status = http.StatusAccepted
	}
	writeRequest(w, status, &req)
}

// ownRequest loads a request the caller may see (see sees): an agent's,
// any for an admin, a child token's own or its descendants'. Another's
// request is "not found": the caller never learns that it exists.
func (s *Server) ownRequest(w http.ResponseWriter, r *http.Request) (approvals.Request, bool) {
	req, err := s.svc.Get(r.Context(), r.PathValue("id"))
	if err == nil {
		var ok bool
		if ok, err = s.sees(r.Context(), agentFrom(r), req); err == nil && !ok {
			err = approvals.ErrNotFound
		}
	}
	if err != nil {
		s.errorResponse(w, r, err)
		return req, false
	}
	return req, true
}

func (s *Server) getRequest(w http.ResponseWriter, r *http.Request) {
	wait, err := parseWait(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_wait", err.Error())
		return
	}
	if wait > 0 {
		release, ok := s.takeStream(w, r, agentFrom(r))
		if !ok {
			return
		}
		defer release()
	}
	req, ok := s.ownRequest(w, r)
	if !ok {
		return
	}
	s.answerRequest(w, r, req, wait)
}

func (s *Server) cancelRequest(w http.ResponseWriter, r *http.Request) {
	req, ok := s.ownRequest(w, r)
	if !ok {
		return
	}
	req, err := s.svc.Cancel(r.Context(), req.ID, agentFrom(r).ID, agentFrom(r).tokenID())
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeRequest(w, http.StatusOK, &req)
}

func (s *Server) decideRequest(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Decision string `json:"decision"`
		Scope    string `json:"scope"`    // allow_always: one of the request's scopes (default: grant_target)
		Duration string `json:"duration"` // allow_for: one of the request's allow_for (default: the first)
		// EveryAgent makes the grant of allow_always or allow_for the whole
		// principal's (every agent); by default it is the request's agent's.
		EveryAgent bool `json:"every_agent"`
	}
	if !decodeJSON(w, r, &b) {
		return
	}
	d, err := approvals.ParseDecision(b.Decision)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_decision", cleanMsg(err))
		return
	}
	ch := approvals.Choice{Decision: d, Scope: b.Scope, EveryAgent: b.EveryAgent}
	if b.Duration != "" {
		if ch.Duration, err = approvals.ParseWhile(b.Duration); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_duration", cleanMsg(err))
			return
		}
	}
	a := agentFrom(r)
	req, err := s.svc.DecideChoice(r.Context(), r.PathValue("id"), ch, approvals.Actor{Channel: approvals.ChannelAPI, ID: a.ID, Name: a.ID})
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// checkAnswer is what /v1/check says: the decision, nothing stored.
type checkAnswer struct {
	Outcome   policy.Outcome  `json:"outcome"`
	Reason    string          `json:"reason"`
	Autonomy  policy.Level    `json:"autonomy"`
	BlockedBy *string         `json:"blocked_by"`
	GrantID   *int64          `json:"grant_id"`
	Vaglio    *vaglio.Verdict `json:"vaglio"`
	Trace     []policy.Step   `json:"trace"`
}

// checkBucket is the limiter's key for an agent's checks (no capability
// is spelled so).
const checkBucket = "/v1/check"

func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	r, span := s.tracedIfAsked(r, "check", a)
	defer span.End()
	var b requestBody
	_, vspan := telemetry.Start(r.Context(), "validate")
	if !decodeJSON(w, r, &b) {
		vspan.End()
		return
	}
	sub, err := s.submission(a, b)
	vspan.End()
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	// A check costs what a request's decision costs (a model call with
	// the LLM judge): it takes from the agent's bucket for checks, one
	// for all capabilities, as big as its rate.
	if wait, ok := s.limiter.take(a, checkBucket); !ok {
		s.metrics.rateLimited.WithLabelValues(a.ID, checkBucket).Inc()
		s.errorResponse(w, r, &rateLimitError{agent: a.ID, rate: a.Rate, capability: checkBucket, wait: wait})
		return
	}
	// Not cancellable: the decision's reads are short, and a context that
	// can be cancelled costs each one two watcher goroutines.
	dec, err := s.decider.Decide(context.WithoutCancel(r.Context()), policy.Input{
		Profile: sub.Profile, Capability: sub.Capability, Target: sub.Target, Requested: sub.Autonomy,
		Channel: sub.Channel, SenderID: sub.SenderID, SessionID: sub.SessionID, Intent: sub.Intent, Executor: sub.Executor,
		Args: sub.Args, Context: sub.Context, DryRun: true, Guard: s.svc.GuardOf(a.ID, sub.Capability),
	})
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	span.Set(telemetry.StringAttr(telemetry.KeyCapability, sub.Capability), telemetry.StringAttr(telemetry.KeyOutcome, string(dec.Outcome)))
	ans := checkAnswer{Outcome: dec.Outcome, Reason: dec.Reason, Autonomy: dec.Autonomy, Trace: dec.Trace, Vaglio: dec.Vaglio}
	if dec.BlockedBy != "" {
		ans.BlockedBy = &dec.BlockedBy
	}
	if dec.GrantID != 0 {
		ans.GrantID = &dec.GrantID
	}
	writeJSON(w, http.StatusOK, ans)
}

func (s *Server) listGrants(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	q := r.URL.Query()
	f := policy.GrantFilter{Channel: q.Get("channel"), SenderID: q.Get("sender_id"), All: q.Get("all") == "true"}
	if f.SenderID == "" {
		f.SenderID = q.Get("sender")
	}
	if !a.Admin { // an agent sees its own grants only: its principal's, for it or every agent
		f.Channel, f.SenderID, f.Agent = a.Channel, a.SenderID, a.ID
	}
	list, err := s.grants.List(r.Context(), f)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": list})
}

func (s *Server) addGrant(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Channel    string `json:"channel"`
		Sender     string `json:"sender"`
		SenderID   string `json:"sender_id"`
		Capability string `json:"capability"`
		Target     string `json:"target"`
		TTL        string `json:"ttl"`
		// Agent, when set, makes the grant that agent's only; without it
		// the grant is the principal's, for every agent (seed 000).
		Agent string `json:"agent"`
	}
	if !decodeJSON(w, r, &b) {
		return
	}
	if s.cfg.Web.PolicyPasskey() {
		s.errorResponse(w, r, errPolicyStepUp)
		return
	}
	if b.Agent != "" && s.AgentByID(b.Agent) == nil {
		writeError(w, http.StatusBadRequest, "invalid_agent", fmt.Sprintf("agent: %q is not a configured agent", b.Agent))
		return
	}
	if b.SenderID == "" {
		b.SenderID = b.Sender
	}
	ttl := time.Duration(s.cfg.Policy.GrantTTL)
	if b.TTL != "" {
		d, err := duration.Parse(b.TTL)
		if err == nil && d < 0 {
			err = fmt.Errorf("a negative duration %q", b.TTL)
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_ttl", "ttl: "+err.Error())
			return
		}
		ttl = d
	}
	if b.Channel == "" || b.SenderID == "" {
		writeError(w, http.StatusBadRequest, "invalid_sender_id", "channel and sender_id are required")
		return
	}
	a := agentFrom(r)
	g, err := s.grants.Record(r.Context(), policy.NewGrant{
		Principal:  policy.Principal{Channel: b.Channel, SenderID: b.SenderID},
		Capability: b.Capability, Target: b.Target, GrantedBy: "api:" + a.ID, TTL: ttl, Agent: b.Agent,
	})
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, grantAnswer{Grant: g, Warnings: config.NotLifted(s.grantGuards(g))})
}

func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "invalid_id", fmt.Sprintf("id: %q is not a grant id", r.PathValue("id")))
		return
	}
	if _, err := s.grants.Get(r.Context(), id); err != nil {
		s.errorResponse(w, r, err)
		return
	}
	changed, err := s.grants.Revoke(r.Context(), id, "revoked", "api:"+agentFrom(r).ID)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	g, err := s.grants.Get(r.Context(), id)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked": changed, "grant": g})
}

// grantAnswer is a grant as the API answers its add: with the guarded
// routes it cannot lift, if any.
type grantAnswer struct {
	policy.Grant
	Warnings []string `json:"warnings,omitempty"`
}

// grantGuards are the guarded routes whose requests g would cover but
// cannot lift: it was not written by a decision on them.
func (s *Server) grantGuards(g policy.Grant) []*policy.Guard {
	var out []*policy.Guard
	for _, gd := range s.cfg.Guards(g.Agent, func(c policy.Capability) bool { return c.Name == g.Capability }) {
		if gd.Key != g.Route {
			out = append(out, gd)
		}
	}
	return out
}
