// Package callbackurl decides where the gateway may POST an agent's
// callback: only to a URL that one of the agent's patterns
// (agents[].callbacks) matches, with no user or password in it, and to a
// loopback, private or link-local address only when the pattern names that
// address itself. The address rule is checked twice: on the URL as given,
// and on every address its host resolves to when the callback is sent, so
// a name that resolves to 127.0.0.1 is not a way around it.
package callbackurl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Allowed is a callback URL that a pattern allows.
type Allowed struct {
	// URL is the URL to send to, written the way it was matched: scheme and
	// host lower-case, the default port and any fragment left out.
	URL string
	// Pattern is the pattern that allowed it.
	Pattern string
	named   netip.Addr // the loopback, private or link-local address the pattern names, if any
	local   bool       // the pattern's host is "localhost": loopback addresses are named
}

// parts is a URL or a pattern cut where patterns are matched.
type parts struct {
	scheme, host, port, rest string
}

func (p parts) authority() string {
	h := p.host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if p.port != "" {
		h += ":" + p.port
	}
	return h
}

func defaultPort(scheme, port string) string {
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		return ""
	}
	return port
}

// splitPattern cuts a pattern "https://host:port/path?query", where any
// part may hold "*".
func splitPattern(pat string) (parts, error) {
	scheme, after, ok := strings.Cut(pat, "://")
	scheme = strings.ToLower(scheme)
	if !ok || (scheme != "http" && scheme != "https") {
		return parts{}, errors.New("want a pattern that starts with http:// or https://")
	}
	auth, rest := after, "/"
	if i := strings.IndexByte(after, '/'); i >= 0 {
		auth, rest = after[:i], after[i:]
	}
	switch {
	case auth == "":
		return parts{}, errors.New("no host")
	case strings.ContainsAny(auth, "@"):
		return parts{}, errors.New("no user or password in a callback pattern")
	case strings.ContainsAny(auth, "?#\\ ") || strings.ContainsAny(rest, "#\\ "):
		return parts{}, errors.New("want scheme://host[:port]/path, without fragment, spaces or backslashes")
	}
	p := parts{scheme: scheme, rest: rest}
	host, port := strings.ToLower(auth), ""
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return parts{}, errors.New("unclosed [ in the host")
		}
		host, port = host[1:end], strings.TrimPrefix(host[end+1:], ":")
	} else if h, pt, ok := strings.Cut(host, ":"); ok {
		host, port = h, pt
	}
	if host == "" {
		return parts{}, errors.New("no host")
	}
	p.host, p.port = host, defaultPort(scheme, port)
	return p, nil
}

// CheckPattern reports what is wrong with a callbacks pattern, if anything.
func CheckPattern(pat string) error {
	_, err := splitPattern(pat)
	return err
}

// parse reads a callback URL the way the HTTP client will send it.
func parse(raw string) (parts, string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return parts{}, "", errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return parts{}, "", errors.New("want an absolute http(s) URL")
	case u.User != nil:
		return parts{}, "", errors.New("no user or password in a callback URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return parts{}, "", errors.New("want an absolute http(s) URL with a host")
	case strings.ContainsAny(u.Host, "\\ "):
		return parts{}, "", errors.New("bad host")
	}
	p := parts{scheme: u.Scheme, host: strings.ToLower(u.Hostname()), port: defaultPort(u.Scheme, u.Port()),
		rest: u.EscapedPath()}
	if p.rest == "" {
		p.rest = "/"
	}
	if u.RawQuery != "" {
		p.rest += "?" + u.RawQuery
	}
	return p, p.scheme + "://" + p.authority() + p.rest, nil
}

// glob matches s against pat, where "*" matches any run of characters
// but "/".
func glob(pat, s string) bool {
	for {
		star := strings.IndexByte(pat, '*')
		if star < 0 {
			return pat == s
		}
		if !strings.HasPrefix(s, pat[:star]) {
			return false
		}
		s, pat = s[star:], pat[star+1:]
		for i := 0; ; i++ {
			if glob(pat, s[i:]) {
				return true
			}
			if i == len(s) || s[i] == '/' {
				return false
			}
		}
	}
}

// special reports an address a callback may reach only when its pattern
// names it: loopback, private, link-local, unspecified, multicast, and
// the shared address space of carrier-grade NAT.
func special(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(ip) || netip.MustParsePrefix("0.0.0.0/8").Contains(ip)
}

func localName(host string) bool { return host == "localhost" || strings.HasSuffix(host, ".localhost") }

// AddrOK reports whether the callback may connect to ip.
func (a Allowed) AddrOK(ip netip.Addr) bool {
	ip = ip.Unmap()
	switch {
	case !special(ip):
		return true
	case a.named.IsValid():
		return ip == a.named
	case a.local:
		return ip.IsLoopback()
	}
	return false
}

// Error is a callback URL that no pattern allows.
type Error struct{ Reason string }

func (e *Error) Error() string { return e.Reason }

// Check finds the pattern that allows raw, or says why none does.
func Check(patterns []string, raw string) (Allowed, error) {
	u, canonical, err := parse(raw)
	if err != nil {
		return Allowed{}, &Error{Reason: err.Error()}
	}
	if len(patterns) == 0 {
		return Allowed{}, &Error{Reason: "this agent may not ask for callbacks (its agents[].callbacks is empty)"}
	}
	refusedBy := ""
	for _, pat := range patterns {
		p, err := splitPattern(pat)
		if err != nil || p.scheme != u.scheme || !glob(p.host, u.host) || !glob(p.port, u.port) || !glob(p.rest, u.rest) {
			continue
		}
		a := Allowed{URL: canonical, Pattern: pat}
		if ip, err := netip.ParseAddr(p.host); err == nil && special(ip) {
			a.named = ip.Unmap()
		}
		a.local = localName(p.host)
		if ip, err := netip.ParseAddr(u.host); err == nil && !a.AddrOK(ip) {
			refusedBy = pat
			continue
		}
		if localName(u.host) && !a.local {
			refusedBy = pat
			continue
		}
		return a, nil
	}
	if refusedBy != "" {
		return Allowed{}, &Error{Reason: fmt.Sprintf("%s is a loopback, private or link-local address; the pattern %q does not name it (write the address itself in agents[].callbacks)", u.host, refusedBy)}
	}
	return Allowed{}, &Error{Reason: fmt.Sprintf("matches none of the agent's callbacks patterns (agents[].callbacks: %s)", strings.Join(patterns, ", "))}
}

// Resolver looks up a host's addresses; net.DefaultResolver.LookupNetIP
// with "ip" in production.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// DefaultResolver is the system's resolver.
func DefaultResolver(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// DialContext dials the callback's host only at an address AddrOK
// accepts: the name is resolved here, and the checked address is the one
// connected to (no second lookup that a rebinding DNS could answer
// differently).
func (a Allowed) DialContext(resolve Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var ips []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip}
		} else if ips, err = resolve(ctx, host); err != nil {
			return nil, err
		}
		var d net.Dialer
		var last error
		for _, ip := range ips {
			if !a.AddrOK(ip) {
				last = fmt.Errorf("callback refused: %s resolves to %s, which the pattern %q does not name", host, ip, a.Pattern)
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			last = err
		}
		if last == nil {
			last = fmt.Errorf("callback: %s has no address", host)
		}
		return nil, last
	}
}
