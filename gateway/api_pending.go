package gateway

import (
	"net/http"
)

// apiMaxPending bounds GET /v1/requests: past it the list says how many
// more wait (more).
const apiMaxPending = 500

// listPending is GET /v1/requests?status=pending (admin agents): what
// waits for a person, oldest first, for `gateway pending`.
func (s *Server) listPending(w http.ResponseWriter, r *http.Request) {
	if st := r.URL.Query().Get("status"); st != "" && st != "pending" {
		writeError(w, http.StatusBadRequest, "invalid_status", "status: only \"pending\" is listed")
		return
	}
	list, err := s.svc.ListPending(r.Context(), apiMaxPending)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	more := 0
	if len(list) == apiMaxPending {
		if n, err := s.svc.CountPending(r.Context()); err == nil {
			more = n - len(list)
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Requests any `json:"requests"`
		More     int `json:"more"`
	}{list, more})
}
