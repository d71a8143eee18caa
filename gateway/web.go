package gateway

import "net/http"

// web is the owner's page; see webRoutes.
type web struct{ s *Server }

func newWeb(s *Server) *web { return &web{s: s} }

// webRoutes mounts the web page (being written).
func (s *Server) webRoutes(mux *http.ServeMux) {}
