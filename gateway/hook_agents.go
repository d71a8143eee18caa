package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// agentHook serves POST /v1/hooks/NAME (every hooks.Adapters()), the
// one hook pipeline (SPEC §9): the body is the agent's hook event exactly
// as the agent wrote it, the answer is the JSON the agent reads, with 200
// (a bad token is the middleware's 401; Claude Code's tool_use_id that
// names an earlier, different call is 409 call_id_conflict with the
// earlier request and the deny, as on POST /v1/requests).
// The event is mapped with the server's own [hooks.NAME] tools and
// unknown_tool and waits up to its wait (lowered by ?wait=, capped at
// HookMaxWait), so `gateway hook NAME` on an agent's machine needs only
// GATEWAY_URL and GATEWAY_TOKEN. A tool call that is several requests (a
// patch touching three files) runs only if every one is allowed; no
// answer in time withdraws whatever is still pending.
func (s *Server) agentHook(ad hooks.Adapter) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r, span := s.traced(r, "hook", agentFrom(r))
		defer span.End()
		span.String(telemetry.KeyHook, ad.Name)
		var conflict *approvals.CallIDConflictError
		ev, v := s.agentVerdict(w, r, ad, &conflict)
		span.String(telemetry.KeyDecision, v.Decision)
		if r.Context().Err() != nil {
			return // the agent gave up; nobody reads the answer
		}
		body := ad.Answer(ev, v).Body
		if conflict != nil && ad.ConflictIs409 {
			out, _ := body.(hooks.Output)
			writeJSON(w, http.StatusConflict, struct {
				apiError
				hooks.Output
			}{callIDConflictBody(conflict), out})
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

func (s *Server) agentVerdict(w http.ResponseWriter, r *http.Request, ad hooks.Adapter, conflict **approvals.CallIDConflictError) (hooks.Event, hooks.Verdict) {
	sec := s.cfg.Hooks.Section(ad.Name)
	wait := min(time.Duration(sec.Wait), HookMaxWait)
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := duration.ParseWait(v)
		if err != nil {
			return hooks.Event{}, hooks.VerdictOf(hooks.Failed(fmt.Errorf("?wait: %w", err)))
		}
		wait = min(wait, d)
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, hooks.MaxEventBytes))
	if err != nil {
		return hooks.Event{}, hooks.VerdictOf(hooks.Failed(fmt.Errorf("%w: %v", hooks.ErrBadEvent, err)))
	}
	ev, err := ad.Decode(raw)
	if err != nil {
		return ev, hooks.VerdictOf(hooks.Failed(err))
	}
	calls, err := ad.Map(ev, sec.Tools)
	if err != nil {
		return ev, hooks.VerdictOf(hooks.Unmapped(err, sec.UnknownTool))
	}
	calls = hooks.LocalOf(raw).Apply(calls) // what `gateway hook` saw on the agent's machine
	a := agentFrom(r)
	// A hook's wait is one of the agent's open waits (max_streams), like
	// an event stream or a long-poll, whatever it asks about (the same
	// tool_use_id again included); past the cap the agent gets a deny at
	// once, never an error status.
	release, ok := s.streams.take(a.ID, maxStreams(a))
	if !ok {
		return ev, capDeny(&tooManyStreamsError{agent: a.ID, max: maxStreams(a)})
	}
	defer release()
	switch ad.RoleOf(ev) {
	case hooks.PairFollow:
		if v, ok := s.followVerdict(r.Context(), a, ad.Name, calls, wait); ok {
			return ev, v
		}
	case hooks.PairLead:
		keys := make([]pairKey, len(calls))
		for i, c := range calls {
			keys[i] = newPairKey(a, ad.Name, c)
		}
		v := s.askAll(r.Context(), a, calls, wait, conflict, func(i int, req approvals.Request) { s.pairs.put(keys[i], req.ID) })
		s.pairs.answered(keys)
		return ev, v
	}
	return ev, s.askAll(r.Context(), a, calls, wait, conflict, nil)
}

// askAll asks about every call and waits for them together: denied as
// soon as one is denied, allowed when all are; whatever is still pending
// at the end of wait (or at a shutdown, or when the agent hangs up) is
// withdrawn and the verdict is ask. made, when set, is told the request
// each call became.
func (s *Server) askAll(ctx context.Context, a *Agent, calls []hooks.Call, wait time.Duration, conflict **approvals.CallIDConflictError, made func(i int, req approvals.Request)) hooks.Verdict {
	verdicts := make([]hooks.Verdict, len(calls))
	var pending []approvals.Request
	var pendingAt []int
	withdrawAll := func() {
		for _, p := range pending {
			s.withdraw(ctx, a, p)
		}
	}
	for i, c := range calls {
		sub, err := callSubmission(a, c, wait)
		if err != nil {
			withdrawAll()
			return hooks.VerdictOf(hooks.Failed(err))
		}
		req, err := s.submit(ctx, a, sub)
		if errors.As(err, conflict) {
			withdrawAll()
			return hooks.Verdict{Decision: hooks.Deny, Reason: "approval gateway: " + err.Error()}
		}
		var tooMany *approvals.TooManyPendingError
		if errors.As(err, &tooMany) {
			withdrawAll()
			return capDeny(tooMany)
		}
		if err != nil {
			withdrawAll()
			if storage.Unavailable(err) {
				s.log.Debug("hook: database unavailable", "err", err) // the expiry sweep logs the outage
				return hooks.VerdictOf(hooks.Failed(errors.New("the gateway's database cannot be reached; retry later")))
			}
			return hooks.VerdictOf(hooks.Failed(errors.New(cleanMsg(err))))
		}
		if made != nil {
			made(i, req)
		}
		if req.Status.Finished() {
			verdicts[i] = hooks.VerdictOf(hooks.Decide(hookResult(req)))
			if verdicts[i].Decision == hooks.Deny {
				withdrawAll()
				return verdicts[i]
			}
			continue
		}
		pending, pendingAt = append(pending, req), append(pendingAt, i)
	}

	// Wait for a person, but not past a shutdown nor past the life of a
	// revoked child token (its requests are then withdrawn).
	deadline := time.Now().Add(wait)
	wctx, stop := s.untilShutdown(ctx)
	defer stop()
	wctx, _, stopWatch := s.untilTokenGone(wctx, a)
	defer stopWatch()
	for k, req := range pending {
		got, err := s.svc.Wait(wctx, req.ID, max(time.Until(deadline), 0))
		if err == nil && got.Status.Finished() {
			v := hooks.VerdictOf(hooks.Decide(hookResult(got)))
			verdicts[pendingAt[k]] = v
			if v.Decision == hooks.Deny {
				pending = pending[k+1:]
				withdrawAll()
				return v
			}
			continue
		}
		// Nobody answered in time, the agent is gone, or we are shutting
		// down: withdraw what is left so its cards stop asking.
		v, decided := s.withdraw(ctx, a, req)
		rest := pending[k+1:]
		pending = rest
		withdrawAll()
		switch {
		case decided:
			verdicts[pendingAt[k]] = v // finished in the last instant
			return lateVerdict(verdicts, v, rest, wait)
		case err == nil:
			return hooks.VerdictOf(hooks.NoAnswer(req.ID, wait, true))
		}
		select {
		case <-s.shutdown:
			return hooks.VerdictOf(hooks.Failed(fmt.Errorf("the gateway is shutting down; request %s withdrawn", req.ID)))
		default:
		}
		return hooks.VerdictOf(hooks.Failed(fmt.Errorf("waiting for request %s: %w", req.ID, err)))
	}
	return hooks.Combine(verdicts)
}

// capDeny is the verdict on a hook call past one of the agent's caps
// (max_streams, max_pending): denied at once, saying which.
func capDeny(err error) hooks.Verdict {
	return hooks.Verdict{Decision: hooks.Deny, Reason: "approval gateway: " + err.Error() + "; denied"}
}

// lateVerdict is the verdict when the request being waited for finished
// between the end of the wait and its withdrawal (v is how it finished;
// rest, already withdrawn, were still to be waited for). It may have
// finished as expired or cancelled too, not only decided: an identical
// call waiting beside this one (the same call id is the same request)
// withdraws it first.
func lateVerdict(verdicts []hooks.Verdict, v hooks.Verdict, rest []approvals.Request, wait time.Duration) hooks.Verdict {
	switch {
	case v.Decision == hooks.Deny:
		return v
	case v.Decision != hooks.Allow:
		return v // expired or withdrawn: ask, saying so
	case len(rest) == 0:
		return hooks.Combine(verdicts)
	}
	return hooks.VerdictOf(hooks.NoAnswer(rest[0].ID, wait, true))
}

// withdraw cancels a pending request. When a decision beat the withdrawal,
// decided is true and v is that decision's verdict.
func (s *Server) withdraw(ctx context.Context, a *Agent, req approvals.Request) (v hooks.Verdict, decided bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := s.svc.Cancel(cctx, req.ID, a.ID, a.tokenID())
	var already *approvals.AlreadyDecidedError
	if errors.As(err, &already) {
		return hooks.VerdictOf(hooks.Decide(hookResult(already.Request))), true
	}
	if err != nil {
		s.log.Warn("hook: withdraw request", "request_id", req.ID, "agent", a.ID, "err", err)
	}
	return hooks.Verdict{}, false
}
