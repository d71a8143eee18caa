package gateway

import (
	"net"
	"strings"

	"github.com/metnos/gateway/config"
)

// LinkBase is where the gateway's own links point: web.public_url, else
// http://localhost:<port> of server.listen (browsers treat localhost as a
// secure context, where passkeys work; 127.0.0.1 pages redirect there).
func LinkBase(cfg config.Config) string {
	if u := strings.TrimRight(cfg.Web.PublicURL, "/"); u != "" {
		return u
	}
	port := "8080"
	if _, p, err := net.SplitHostPort(cfg.Server.Listen); err == nil && p != "" && p != "0" {
		port = p
	}
	return "http://localhost:" + port
}
