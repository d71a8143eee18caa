package gateway

import (
	"context"
	"time"
)

// tokenRecheck is how often an open connection made with a child token
// (an event stream, a long-poll, an MCP session) reads the token again:
// the SSE heartbeat's period, so a revoke by another process that sent
// no notice (the CLI on SQLite) or an expiry is seen within one of them.
const tokenRecheck = sseHeartbeat

// tokenGone returns a channel closed once the child token a came with is
// revoked or expired (or its ancestors are), read again at every
// recheck, at once on a revoke on this replica or heard of from another,
// and at the token's expiry; it is never closed for an agent's own token.
// It stops watching when ctx ends. A failed read counts as gone: the
// client reconnects and is authenticated afresh.
func (s *Server) tokenGone(ctx context.Context, a *Agent) <-chan struct{} {
	if a.Child == nil || s.tokens == nil {
		return nil
	}
	gone := make(chan struct{})
	go func() {
		tick := time.NewTicker(s.recheck)
		defer tick.Stop()
		expiry := time.NewTimer(max(a.Child.ExpiresAt.Sub(s.now()), 0))
		defer expiry.Stop()
		for {
			revoked := s.tokens.Revoked()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-revoked:
			case <-expiry.C:
			}
			if alive, err := s.tokens.Alive(ctx, a.Child); !alive || err != nil {
				if ctx.Err() == nil {
					close(gone)
				}
				return
			}
		}
	}()
	return gone
}

// untilTokenGone is ctx, cancelled as well when a's child token is gone
// (see tokenGone); revoked reports whether that is why it ended.
func (s *Server) untilTokenGone(ctx context.Context, a *Agent) (c context.Context, revoked func() bool, stop func()) {
	if a.Child == nil || s.tokens == nil {
		return ctx, func() bool { return false }, func() {}
	}
	c, cancel := context.WithCancel(ctx)
	gone := s.tokenGone(c, a)
	go func() {
		select {
		case <-gone:
			cancel()
		case <-c.Done():
		}
	}()
	return c, func() bool {
		select {
		case <-gone:
			return true
		default:
			return false
		}
	}, cancel
}
