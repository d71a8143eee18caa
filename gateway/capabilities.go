package gateway

import (
	"fmt"
	"net/http"

	"github.com/metnos/gateway/policy"
)

// capabilities is GET /v1/capabilities[?include_blocked=true]: what the
// calling agent may use (Executor's tools.list), each capability with the
// outcome at its ceiling after its profile and any capability-wide block.
// Denied ones are left out unless include_blocked=true.
func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	include := false
	switch v := r.URL.Query().Get("include_blocked"); v {
	case "", "false", "0":
	case "true", "1":
		include = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_include_blocked", fmt.Sprintf("include_blocked: want true or false, got %q", v))
		return
	}
	rules := s.decider.Rules
	if s.rules != nil {
		var err error
		if rules, err = s.rules.Rules(r.Context()); err != nil {
			s.errorResponse(w, r, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"mode":         a.Profile().Mode,
		"capabilities": policy.Capabilities(rules, a.Profile(), a.Channel, a.SenderID, include),
	})
}
