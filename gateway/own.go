package gateway

import (
	"net"
	"net/netip"
	"os"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// OwnGuard is what the gateway guards of itself (vaglio.Own), from its
// config: its files (config.OwnPaths) and the addresses it is reached at,
// so no agent reads its token or database and no network:http request
// calls its API. listen is the address it listens on (the config's
// server.listen until the listener exists, then the listener's, whose
// port is known). getenv finds the state directory and home (nil:
// os.Getenv).
func OwnGuard(cfg config.Config, listen string, getenv func(string) string) vaglio.Own {
	return vaglio.Own{Paths: cfg.OwnPaths(getenv), Endpoints: ownEndpoints(listen, cfg.Web.PublicURL)}
}

// ownEndpoints are the addresses of a gateway listening on listen and
// published at publicURL. Every loopback spelling is the one endpoint
// "localhost" (see vaglio.Endpoint); a gateway listening on all
// interfaces is also reached at each of the machine's addresses and its
// host name. The public URL's host is the gateway on every port.
func ownEndpoints(listen, publicURL string) []vaglio.Endpoint {
	var out []vaglio.Endpoint
	add := func(host, port string) {
		h, err := policy.CanonicalHost(host)
		if err != nil {
			return
		}
		if isLoopbackHost(h) {
			h = "localhost"
		}
		for _, e := range out {
			if e.Host == h && e.Port == port {
				return
			}
		}
		out = append(out, vaglio.Endpoint{Host: h, Port: port})
	}
	if host, port, err := net.SplitHostPort(listen); err == nil {
		if port == "0" {
			port = "" // not known yet: every port
		}
		a, aerr := netip.ParseAddr(host)
		switch {
		case host == "" || aerr == nil && a.IsUnspecified():
			add("localhost", port)
			if addrs, err := net.InterfaceAddrs(); err == nil {
				for _, ia := range addrs {
					if n, ok := ia.(*net.IPNet); ok {
						if ip, ok := netip.AddrFromSlice(n.IP); ok {
							add(bracket(ip.Unmap()), port)
						}
					}
				}
			}
			if name, err := os.Hostname(); err == nil {
				add(name, port)
			}
		case aerr == nil:
			add(bracket(a.Unmap()), port)
		default:
			add(host, port)
		}
	}
	if publicURL != "" {
		if h, err := policy.ParseHost(publicURL); err == nil {
			port := ""
			if isLoopbackHost(h.Host) {
				port = h.Port
			}
			add(h.Host, port)
		}
	}
	return out
}

func bracket(a netip.Addr) string {
	if a.Is6() {
		return "[" + a.String() + "]"
	}
	return a.String()
}

// isLoopbackHost reports a canonical host that reaches this machine's
// loopback: localhost and every name under it, 127.0.0.0/8, ::1, and the
// unspecified addresses (a connection to 0.0.0.0 reaches the local host).
func isLoopbackHost(h string) bool {
	if h == "localhost" || len(h) > len(".localhost") && h[len(h)-len(".localhost"):] == ".localhost" {
		return true
	}
	if len(h) > 1 && h[0] == '[' {
		h = h[1 : len(h)-1]
	}
	a, err := netip.ParseAddr(h)
	return err == nil && (a.IsLoopback() || a.IsUnspecified())
}
