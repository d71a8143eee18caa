package gateway

import (
	"context"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/hooks"
)

// HookMaxWait bounds how long POST /v1/hooks/NAME holds its answer while
// a person decides. Claude Code gives a hook 600 s by default (set
// "timeout": 600 on an http hook); answering by 9m30s leaves the call
// half a minute to arrive, so Claude Code always gets our "ask" instead of
// timing out, which for an http hook it treats as a non-blocking error and
// goes on without the gateway's word.
const HookMaxWait = 9*time.Minute + 30*time.Second

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
