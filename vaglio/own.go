package vaglio

import (
	"fmt"
	"net/netip"
	"path"
	"strings"
)

// Own is what the gateway guards of itself, from its running config: an
// agent that reads the generated admin token becomes an admin, one that
// writes the database or the config decides its own requests, and one
// that sends requests to the gateway's own API acts past its back.
type Own struct {
	// Paths are the gateway's files and directories: the database (its
	// -wal, -shm and -journal too), the config file, the token file, the
	// state directory and the decision-log directory. They are forbidden
	// paths for every agent, in targets, args and shell commands.
	Paths []string
	// Endpoints are the canonical hosts (policy.ParseHost) the gateway is
	// reached at, each with a port or "" for any port; a network:http
	// request for one is denied.
	Endpoints []Endpoint
}

// Endpoint is one address of the gateway: a canonical host and a port
// ("" for any). The host "localhost" stands for every loopback spelling
// (127.0.0.0/8, [::1], a.localhost, 0.0.0.0).
type Endpoint struct {
	Host, Port string
}

// ownRules is Own compiled: its paths as path rules, and matcher the
// closed list of forbidden paths followed by them.
type ownRules struct {
	paths     []pathRule
	matcher   *pathMatcher
	endpoints []Endpoint
}

// compileOwn turns the gateway's paths into anchored path rules: a
// directory covers everything under it, a file also its siblings that
// start with its name (gateway.db-wal, gateway.db-shm).
func compileOwn(o Own, home string) *ownRules {
	out := &ownRules{endpoints: o.Endpoints}
	for _, p := range o.Paths {
		p = expandTilde(strings.TrimSpace(p), home)
		if !strings.HasPrefix(p, "/") {
			continue
		}
		p = path.Clean(strings.ToLower(p))
		if p == "/" {
			continue
		}
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		comps := make([]component, len(parts))
		for i, c := range parts {
			comps[i] = lit(c)
		}
		last := parts[len(parts)-1]
		comps[len(comps)-1] = component{pat: globEscape(last) + "*", example: last}
		out.paths = append(out.paths, pathRule{name: "of the gateway's own (" + p + ")", anchored: true, comps: comps})
	}
	out.matcher = compilePaths(forbiddenPaths, out.paths)
	return out
}

// globEscape escapes path.Match syntax in a literal name.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reachesGateway reports a network:http request for one of the gateway's
// own addresses. A request that names no port names every port.
func (o *ownRules) reachesGateway(r Request) (string, bool) {
	if r.Host == "" {
		return "", false
	}
	for _, e := range o.endpoints {
		if e.Port != "" && r.Port != "" && e.Port != r.Port {
			continue
		}
		if sameHost(e.Host, r.Host) {
			return fmt.Sprintf("guard: the target is the gateway itself (%s); agents do not call the gateway through network:http",
				joinHostPort(e.Host, e.Port)), true
		}
		for _, a := range r.Addrs {
			if sameHost(e.Host, a) {
				return fmt.Sprintf("guard: the target is the gateway itself (%s resolves to %s); agents do not call the gateway through network:http",
					r.Host, joinHostPort(a, e.Port)), true
			}
		}
	}
	return "", false
}

// needsAddrs reports whether judging a request for port (""
// for none) against the gateway's addresses needs the addresses a name
// resolves to: some endpoint is an address or loopback on that port.
func (o *ownRules) needsAddrs(port string) bool {
	for _, e := range o.endpoints {
		if e.Port != "" && port != "" && e.Port != port {
			continue
		}
		if _, err := netip.ParseAddr(strings.Trim(e.Host, "[]")); err == nil || e.Host == "localhost" {
			return true
		}
	}
	return false
}

// sameHost compares canonical hosts. The endpoint "localhost" stands for
// every spelling of the loopback: localhost and every name under it
// (browsers and curl resolve a.localhost to loopback), 127.0.0.0/8, [::1],
// and 0.0.0.0 and [::], which reach the local host too.
func sameHost(own, host string) bool {
	if own == host {
		return true
	}
	if own != "localhost" {
		return false
	}
	if strings.HasSuffix(host, ".localhost") || host == "[::1]" || host == "[::]" || host == "0.0.0.0" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Is4() && a.IsLoopback()
}

func joinHostPort(h, p string) string {
	if p == "" {
		return h + ", any port"
	}
	return h + ":" + p
}

// HoldsForbidden reports whether the tree under a path, or what a glob in
// it can reach, holds a forbidden path: /etc holds /etc/shadow, the home
// directory and every directory above it hold ~/.ssh, /srv/gw holds the
// gateway's database there. A search or a listing of such a tree is never
// allowed by the autonomy table alone (see Vaglio.MustAsk). The part of p
// before its first glob is the tree; a relative path whose directory is
// unknown holds anything.
func holdsForbidden(p, home string, own *ownRules) (string, bool) {
	p = expandTilde(strings.TrimSpace(p), home)
	if p == "" {
		return "", false
	}
	var buf [16]string
	comps, rooted := splitComps(buf[:0], p)
	if hasAnyByte(p, globOrBrace) {
		for i, c := range comps {
			if strings.ContainsAny(c, "*?[{") {
				comps = comps[:i]
				break
			}
		}
	}
	if !rooted {
		if len(comps) == 0 || comps[0] == "." {
			return "a directory that may be /", true
		}
		return "", false
	}
	if len(comps) == 1 && comps[0] == "." || len(comps) == 1 && comps[0] == "" {
		comps = nil // the root
	}
	m := forbiddenMatcher
	if own != nil {
		m = own.matcher
	}
	if rule, hit := m.above(comps); hit {
		return rule, true
	}
	// The home has at most one element more than it has slashes: when
	// comps has more, the home cannot start with them, and is not split.
	if home != "" && len(comps) <= strings.Count(home, "/")+1 {
		hc, _ := pathComps(home)
		if len(comps) <= len(hc) && hasPrefixStrings(hc, comps) {
			return "~/.ssh", true
		}
	}
	return "", false
}

func hasPrefixStrings(s, prefix []string) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}
