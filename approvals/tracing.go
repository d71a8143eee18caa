package approvals

import (
	"context"
	"time"

	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
)

// The statements of this file.
const (
	insertTrace = `INSERT INTO request_traces (request_id, traceparent) VALUES ($1, $2)`
	selectTrace = `SELECT traceparent FROM request_traces WHERE request_id = $1`
)

// DecideChoice is Decide with what the decision grants: the scope of
// Allow always, the while of Allow for. A choice the request's card did
// not offer is refused (ErrNotOffered, ErrAllowAlwaysRefused) and decides
// nothing: a tap forged or replayed from another card must not widen a
// grant.
func (s *Service) DecideChoice(ctx context.Context, id string, ch Choice, by Actor) (Request, error) {
	if s.opts.Telemetry == nil {
		return s.decideChoice(ctx, id, ch, by)
	}
	ctx, span := s.startFor(ctx, id, "decision", time.Time{})
	span.Set(telemetry.StringAttr(telemetry.KeyDecision, string(ch.Decision)), telemetry.StringAttr(telemetry.KeyDecidedBy, by.Channel))
	r, err := s.decideChoice(ctx, id, ch, by)
	if err != nil {
		span.Fail("decision refused")
	} else {
		span.String(telemetry.KeyStatus, string(r.Status))
	}
	span.End()
	return r, err
}

// keepTrace records, in the request's own transaction, the traceparent of
// a pending request that is traced.
func keepTrace(ctx context.Context, tx storage.Querier, id, traceparent string) error {
	_, err := tx.ExecContext(ctx, insertTrace, id, traceparent)
	return err
}

// traceOf is the traceparent request id was traced with: "" when
// telemetry is off (no query), or the request was not traced.
func (s *Service) traceOf(ctx context.Context, id string) string {
	if s.opts.Telemetry == nil {
		return ""
	}
	var tp string
	if err := s.db.QueryRowContext(context.WithoutCancel(ctx), selectTrace, id).Scan(&tp); err != nil {
		return ""
	}
	return tp
}

// startFor starts a span in request id's trace (at start, unless zero):
// the zero Span when telemetry is off or the request was not traced.
func (s *Service) startFor(ctx context.Context, id, name string, start time.Time) (context.Context, telemetry.Span) {
	tp := s.traceOf(ctx, id)
	if tp == "" {
		return ctx, telemetry.Span{}
	}
	return s.opts.Telemetry.StartIn(ctx, tp, name, start)
}

// traceWait records how long r waited for a person, now that it is
// final, and returns its traceparent ("" when untraced) for the callback.
func (s *Service) traceWait(r Request) string {
	tp := s.traceOf(context.Background(), r.ID)
	if tp == "" || r.DecidedAt == nil {
		return tp
	}
	_, span := s.opts.Telemetry.StartIn(context.Background(), tp, "wait", r.CreatedAt)
	span.Set(telemetry.StringAttr(telemetry.KeyRequestID, r.ID), telemetry.StringAttr(telemetry.KeyStatus, string(r.Status)))
	span.EndAt(*r.DecidedAt)
	return tp
}

// startCard starts the span of one card sent on messenger to request id
// (its post, or an edit to show its status).
func (s *Service) startCard(ctx context.Context, messenger, id, name string) (context.Context, telemetry.Span) {
	ctx, span := s.startFor(ctx, id, name, time.Time{})
	span.String(telemetry.KeyMessenger, messenger)
	return ctx, span
}
