package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/storage"
)

// HookMaxWait bounds how long POST /v1/hooks/claude-code holds its answer
// while a person decides. Claude Code gives a hook 600 s by default (set
// "timeout": 600 on an http hook); answering by 9m30s leaves the call
// half a minute to arrive, so Claude Code always gets our "ask" instead of
// timing out, which for an http hook it treats as a non-blocking error and
// goes on without the gateway's word.
const HookMaxWait = 9*time.Minute + 30*time.Second

// claudeCodeHook serves Claude Code's http hook type (SPEC §9). The body is
// a PreToolUse event; the answer is the hook output JSON, always with 200
// (Claude Code reads a decision only from a 2xx), except for a bad token,
// which the middleware answers 401. It asks like `gateway hook
// claude-code`: the request's call_id is the tool_use_id, so a retried
// hook finds the same request; it waits up to [hooks.claude_code] wait,
// lowered by ?wait= (for an http hook whose timeout is shorter) and capped
// at HookMaxWait; no answer by then withdraws the request and answers ask.
//
// A tool_use_id that names an earlier, different call is refused like a
// reused call_id on /v1/requests: 409 call_id_conflict with the earlier
// request, and a deny in hookSpecificOutput for a caller that reads the
// body whatever the status (Claude Code itself takes a non-2xx as a
// non-blocking error and falls back to its own permission rules).
func (s *Server) claudeCodeHook(w http.ResponseWriter, r *http.Request) {
	var conflict *approvals.CallIDConflictError
	out := s.hookAnswer(w, r, &conflict)
	if r.Context().Err() != nil {
		return // Claude Code gave up; nobody reads the answer
	}
	if conflict != nil {
		writeJSON(w, http.StatusConflict, struct {
			apiError
			hooks.Output
		}{callIDConflictBody(conflict), out})
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) hookAnswer(w http.ResponseWriter, r *http.Request, conflict **approvals.CallIDConflictError) hooks.Output {
	a := agentFrom(r)
	cc := s.cfg.Hooks.ClaudeCode
	wait := min(cc.Wait, HookMaxWait)
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := duration.Parse(v)
		if err != nil || d < 0 {
			return hooks.Failed(fmt.Errorf("?wait=%q is not a duration (e.g. 25s)", v))
		}
		wait = min(wait, d)
	}
	ev, err := hooks.Decode(http.MaxBytesReader(w, r.Body, hooks.MaxEventBytes))
	if err != nil {
		return hooks.Failed(err)
	}
	call, err := hooks.Map(ev, cc.Tools)
	if err != nil {
		return hooks.Unmapped(err, cc.UnknownTool)
	}
	sub, err := s.submission(a, requestBody{
		CallID: call.CallID, Capability: call.Capability, Target: call.Target, Intent: call.Intent,
		Executor: call.Executor, Summary: call.Summary, Args: call.Args, TimeoutS: wait.Seconds(),
	})
	if err != nil {
		return hooks.Failed(err)
	}
	// A repeated tool_use_id returns the existing request and takes no token.
	req, err := s.submit(r.Context(), a, sub)
	if errors.As(err, conflict) {
		return hooks.Answer(hooks.Deny, "approval gateway: "+err.Error())
	}
	if err != nil {
		if storage.Unavailable(err) {
			s.log.Debug("hook: database unavailable", "err", err) // the expiry sweep logs the outage
			return hooks.Failed(errors.New("the gateway's database cannot be reached; retry later"))
		}
		return hooks.Failed(errors.New(cleanMsg(err)))
	}
	if req.Status.Finished() {
		return hooks.Decide(hookResult(req))
	}

	// Wait for a person, but not past a shutdown: the answer is ask then.
	// A revoked child token's wait ends too (and its request is withdrawn).
	ctx, stop := s.untilShutdown(r.Context())
	ctx, _, stopWatch := s.untilTokenGone(ctx, a)
	got, err := s.svc.Wait(ctx, req.ID, wait)
	stopWatch()
	stop()
	if err == nil && got.Status.Finished() {
		return hooks.Decide(hookResult(got))
	}
	// No answer in time, Claude Code gone, or shutting down: withdraw the
	// request so its cards stop asking, and let the local prompt decide.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer ccancel()
	got, cerr := s.svc.Cancel(cctx, req.ID, a.ID, a.tokenID())
	var already *approvals.AlreadyDecidedError
	if errors.As(cerr, &already) {
		return hooks.Decide(hookResult(already.Request)) // decided in the last instant
	}
	if cerr != nil {
		s.log.Warn("hook: withdraw request", "request_id", req.ID, "agent", a.ID, "err", cerr)
	}
	if err == nil {
		return hooks.NoAnswer(req.ID, wait, cerr == nil)
	}
	select {
	case <-s.shutdown:
		return hooks.Failed(fmt.Errorf("the gateway is shutting down; request %s withdrawn", req.ID))
	default:
	}
	return hooks.Failed(fmt.Errorf("waiting for request %s: %w", req.ID, err))
}

// hookResult is what hooks.Decide needs of a request.
func hookResult(r approvals.Request) hooks.Result {
	res := hooks.Result{ID: r.ID, Status: string(r.Status), DecidedBy: r.DecidedBy, Reason: r.Reason, Note: r.Note}
	if r.Decision != nil {
		res.Decision = string(*r.Decision)
	}
	if r.BlockedBy != nil {
		res.BlockedBy = *r.BlockedBy
	}
	return res
}

// untilShutdown returns a context that also ends when the server begins
// shutting down, so a long wait gives way to a restart. Call stop when done.
func (s *Server) untilShutdown(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.shutdown:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
