package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/metnos/gateway/approvals"
)

// sseHeartbeat keeps idle streams alive through proxies.
const sseHeartbeat = 15 * time.Second

// RequiredEvent is the data of an approval_required SSE event: what an
// event-driven agent needs to match it to its own pending call.
type RequiredEvent struct {
	ID         string `json:"id"`
	CallID     string `json:"call_id"`
	Capability string `json:"capability"`
	Target     string `json:"target"`
	Command    string `json:"command"`
	ExpiresAt  string `json:"expires_at"`
}

// ResolvedEvent is the data of an approval_resolved SSE event.
type ResolvedEvent struct {
	ID       string              `json:"id"`
	CallID   string              `json:"call_id"`
	Decision *approvals.Decision `json:"decision"`
	Status   approvals.Status    `json:"status"`
	Note     string              `json:"note,omitempty"`
}

// ProgressEvent is the data of an approval_progress SSE event: an
// approval was counted and the request waits for more.
type ProgressEvent struct {
	ID        string               `json:"id"`
	CallID    string               `json:"call_id"`
	Approvals []approvals.Approval `json:"approvals"`
	Quorum    int                  `json:"quorum"`
}

// eventData is the SSE payload of e.
func eventData(e approvals.Event) any {
	r := e.Request
	if e.Kind == approvals.EventProgress {
		return ProgressEvent{ID: r.ID, CallID: r.CallID, Approvals: r.Approvals, Quorum: r.Quorum}
	}
	if e.Kind == approvals.EventNotification {
		return approvals.NewNotificationBody(r)
	}
	if e.Kind == approvals.EventRequired {
		return RequiredEvent{ID: r.ID, CallID: r.CallID, Capability: r.Capability, Target: r.Target,
			Command: r.Target, ExpiresAt: r.ExpiresAt.Format(time.RFC3339)}
	}
	return ResolvedEvent{ID: r.ID, CallID: r.CallID, Decision: r.Decision, Status: r.Status, Note: r.Note}
}

// events streams this agent's approval_required and approval_resolved
// events (an admin's stream carries every agent's, and the
// command_notification events of [[policy.notify]]'s "web" delivery; a
// child token's only its own and its descendants'). A child token's
// stream ends with "event: revoked" once the token is revoked or expired
// (see tokenGone).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "streaming unsupported")
		return
	}
	release, ok := s.takeStream(w, r, a)
	if !ok {
		return
	}
	defer release()
	scope := a.ID
	if a.Admin {
		scope = ""
	}
	ch := s.svc.Subscribe(r.Context(), scope)
	gone := s.tokenGone(r.Context(), a)
	// A child token's stream carries its own requests and its
	// descendants' only; what each token id is to it is asked once.
	covers := map[string]bool{}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": connected\n\n")
	flusher.Flush()
	tick := time.NewTicker(sseHeartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.shutdown:
			return
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
			flusher.Flush()
		case <-gone:
			// The token was revoked or expired: the stream ends with a
			// word the client can tell from a dropped connection.
			fmt.Fprint(w, "event: revoked\ndata: {\"reason\":\"the token was revoked or has expired\"}\n\n")
			flusher.Flush()
			return
		case e, open := <-ch:
			if !open {
				return // fell behind: the client reconnects
			}
			if a.Child != nil {
				tid := e.Request.TokenID
				ok, seen := covers[tid]
				if !seen {
					var err error
					if ok, err = s.sees(r.Context(), a, e.Request); err != nil {
						return // the client reconnects
					}
					covers[tid] = ok
				}
				if !ok {
					continue
				}
			}
			b, _ := json.Marshal(eventData(e))
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.Kind, b)
			flusher.Flush()
		}
	}
}
