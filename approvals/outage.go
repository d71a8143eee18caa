package approvals

import (
	"context"
	"time"
)

// noteDB logs how a background pass over the database ended (the expiry
// sweep, the timers, a card dispatcher's query, the prune job): a failure
// because the database cannot be reached goes to the DB's Outage, which
// logs the outage once when it starts; any other failure is logged as an
// error each time; a pass that worked ends an outage under way (logged
// once). A pass cut short by shutdown logs nothing. began is when the pass
// began, by the wall clock (time.Now, not the service's clock).
func (s *Service) noteDB(ctx context.Context, began time.Time, err error, what string, args ...any) {
	switch {
	case err == nil:
		s.db.Outage.Reached(s.log, began)
	case ctx.Err() != nil:
	case s.db.Outage.Failed(s.log, what, began, err):
	default:
		s.log.Error(what+" failed", append(args, "err", err)...)
	}
}
