package gateway

import (
	"net/http"
	"strconv"

	"github.com/metnos/gateway/storage"
)

// Paging of GET /v1/audit.
const (
	auditPageDefault = 100
	auditPageMax     = 1000
)

// auditPage is the answer of GET /v1/audit: rows oldest first, and the
// after= of the next page (null when this is the last).
type auditPage struct {
	Events []storage.AuditEvent `json:"events"`
	Next   *int64               `json:"next"`
}

// listAudit answers GET /v1/audit (admin agents): the filters of
// `gateway audit` as query parameters, after=SEQ and limit for pages.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := storage.AuditFilter{Agent: q.Get("agent"), RequestID: q.Get("request"), Event: q.Get("event"),
		Actor: q.Get("actor"), Capability: q.Get("capability")}
	if f.RequestID == "" {
		f.RequestID = q.Get("request_id")
	}
	now := s.now()
	var err error
	if f.Since, err = storage.ParseAuditTime(q.Get("since"), now); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_since", "since: "+err.Error())
		return
	}
	if f.Until, err = storage.ParseAuditTime(q.Get("until"), now); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_until", "until: "+err.Error())
		return
	}
	if v := q.Get("after"); v != "" {
		if f.After, err = strconv.ParseInt(v, 10, 64); err != nil || f.After < 0 {
			writeError(w, http.StatusBadRequest, "invalid_after", "after: not a seq")
			return
		}
	}
	limit := auditPageDefault
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > auditPageMax {
			writeError(w, http.StatusBadRequest, "invalid_limit", "limit: a number from 1 to "+strconv.Itoa(auditPageMax))
			return
		}
	}
	f.Limit = limit + 1 // one more tells whether there is a next page
	rows, err := s.svc.DB().QueryAudit(r.Context(), f)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	page := auditPage{Events: rows}
	if len(rows) > limit {
		page.Events = rows[:limit]
		next := rows[limit-1].Seq
		page.Next = &next
	}
	if page.Events == nil {
		page.Events = []storage.AuditEvent{}
	}
	writeJSON(w, http.StatusOK, page)
}
