package approvals

import (
	"context"
	"strings"
)

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
