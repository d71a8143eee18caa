package gateway

import "net/http"

// claudeCodeHook serves Claude Code's http hook type (being written).
func (s *Server) claudeCodeHook(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "not_implemented", "the Claude Code hook endpoint is not built yet")
}
