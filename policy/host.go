package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// isPublicSuffix reports a domain under which anyone may register names
// (co.uk, github.io: the public suffix list, ICANN and private parts):
// "*." and a public suffix is no one's domain, so no grant may name it.
func isPublicSuffix(domain string) bool {
	ps, _ := publicsuffix.PublicSuffix(domain)
	return ps == domain
}

// nat64Prefixes are the IPv6 prefixes (/96) whose last 32 bits are an
// IPv4 address a NAT64 gateway reaches: the well-known 64:ff9b::/96 (RFC
// 6052) and the local-use 64:ff9b:1::/96 (RFC 8215).
var nat64Prefixes = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("64:ff9b:1::/96")}

// embeddedIPv4 is the IPv4 address an IPv6 address reaches: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d, deprecated but still
// routed by some stacks; :: and ::1 are not), IPv4-translated
// (::ffff:0:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d).
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if a = a.Unmap(); a.Is4() {
		return a, true
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	zero := func(bs []byte) bool {
		for _, x := range bs {
			if x != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case zero(b[:12]) && !zero(b[12:14]): // ::a.b.c.d, not :: or ::1 (or another ::x)
		return last, true
	case zero(b[:8]) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0:
		return last, true
	}
	for _, p := range nat64Prefixes {
		if p.Contains(a) {
			return last, true
		}
	}
	return netip.Addr{}, false
}

// HostTarget is what a host target (network:http) names, read the way a
// browser, Node's URL and curl read it (the WHATWG URL standard), so that
// rules, grants, the guard and cards all see the host the request would
// really reach.
type HostTarget struct {
	// Host is the canonical host: a lower-case ASCII domain (IDNs in their
	// xn-- form) without a trailing dot, an IPv4 address in dotted decimal
	// (whatever form it was written in: 2130706433, 0x7f.1, 0177.0.0.1),
	// or a bracketed IPv6 address in its shortest form; an IPv4-mapped
	// IPv6 address ([::ffff:127.0.0.1]) is the IPv4 address it reaches.
	Host string
	// Port is the port in decimal without leading zeros: as written, else
	// the scheme's default (80 for http), else "" (a bare host names no
	// port, and so stands for every port).
	Port string
	// Written is the host as the target spells it, lower-cased: what a card
	// shows beside Host when the two differ.
	Written string
}

// ErrBadHost is wrapped by every error of ParseHost.
var ErrBadHost = errors.New("not a host")

// specialPorts are the WHATWG special schemes that reach a network host,
// with their default ports. "file" is special too but names no host.
var specialPorts = map[string]string{"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}

// ParseHost reads a host target: a URL ("https://Evil.com:8443/x",
// "http:evil.com", "http:/\evil.com" are refused for the backslash only),
// or host[:port][/path] with an optional user@ (what curl reads without a
// scheme). For the special schemes (http, https, ws, wss, ftp) any run of
// slashes after the colon is skipped, as WHATWG does: "http:evil.com" names
// evil.com, never the host "http". Another scheme names a host only with
// "//" ("ssh://git.example.com"); without it the target must be
// host:port ("localhost:8080") or user info ("user:pw@host"). Everything a parser could read two ways is
// refused rather than guessed: a backslash, a percent escape or a control
// character anywhere, an empty label, an IPv4-looking host that is no
// IPv4 address ("evil.123"), a bad port.
func ParseHost(target string) (HostTarget, error) {
	t := strings.TrimFunc(target, func(r rune) bool { return r <= ' ' })
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c < ' ' || c == 0x7f:
			return HostTarget{}, fmt.Errorf("%w: a control character in %q", ErrBadHost, target)
		case c == '\\':
			// Parsers disagree on "http://good.com\\@evil.com": refuse, don't guess.
			return HostTarget{}, fmt.Errorf("%w: a backslash in a host target", ErrBadHost)
		}
	}
	rest, port := t, ""
	if scheme, after, ok := cutScheme(t); ok {
		switch def, special := specialPorts[scheme]; {
		case special:
			rest, port = strings.TrimLeft(after, "/"), def
		case scheme == "file":
			return HostTarget{}, fmt.Errorf("%w: a file URL names no network host", ErrBadHost)
		case strings.HasPrefix(after, "//"):
			rest = after[2:]
		case isPortThenPath(after):
			// "localhost:8080" is a host and a port, not a scheme.
		case strings.Contains(authorityOf(t), "@"):
			// "user:pw@evil.com": user info, as curl reads it.
		default:
			return HostTarget{}, fmt.Errorf("%w: %q has a scheme %q without // and names no host", ErrBadHost, target, scheme)
		}
	}
	authority := authorityOf(rest)
	if i := strings.LastIndexByte(authority, '@'); i >= 0 { // user:pass@host
		authority = authority[i+1:]
	}
	written, portText := authority, ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return HostTarget{}, fmt.Errorf("%w: %q has no closing ]", ErrBadHost, target)
		}
		written, portText = authority[:end+1], authority[end+1:]
		if portText != "" && portText[0] != ':' {
			return HostTarget{}, fmt.Errorf("%w: %q has text after ]", ErrBadHost, target)
		}
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		written, portText = authority[:i], authority[i:]
	}
	if portText = strings.TrimPrefix(portText, ":"); portText != "" {
		n, err := strconv.ParseUint(portText, 10, 16)
		if err != nil || strings.TrimLeft(portText, "0123456789") != "" {
			return HostTarget{}, fmt.Errorf("%w: %q has a bad port", ErrBadHost, target)
		}
		port = strconv.FormatUint(n, 10)
	}
	host, err := CanonicalHost(written)
	if err != nil {
		return HostTarget{}, err
	}
	return HostTarget{Host: host, Port: port, Written: strings.ToLower(written)}, nil
}

// authorityOf is s up to its path, query or fragment.
func authorityOf(s string) string {
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		return s[:i]
	}
	return s
}

// cutScheme splits "scheme:rest" where scheme is a URL scheme (a letter,
// then letters, digits, '+', '-', '.'), lower-cased.
func cutScheme(t string) (scheme, rest string, ok bool) {
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(t[:i]), t[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// isPortThenPath reports whether s (what follows "name:") is a port,
// possibly empty, then nothing or a path, query or fragment.
func isPortThenPath(s string) bool {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i == len(s) || strings.IndexByte("/?#", s[i]) >= 0
}

// lookupProfile is the UTS #46 processing of the WHATWG "domain to ASCII":
// non-transitional, CheckBidi and CheckJoiners on, CheckHyphens and
// UseSTD3ASCIIRules off (browsers accept "r3---sn-x" and "a_b").
var lookupProfile = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false),
	idna.CheckHyphens(false), idna.StrictDomainName(false), idna.VerifyDNSLength(false))

// CanonicalHost canonicalises one host as written (no scheme, port or
// path): see HostTarget.Host. The order is the WHATWG host parser's: IDNA
// mapping first (so "evil.com。" is "evil.com." and "１２７.０.０.１" an IPv4
// address), then the IPv4 forms, then one trailing dot is dropped.
func CanonicalHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("%w: empty host", ErrBadHost)
	}
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") || strings.ContainsAny(h, "%") {
			return "", fmt.Errorf("%w: %q is not an IPv6 address", ErrBadHost, h)
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("%w: %q is not an IPv6 address", ErrBadHost, h)
		}
		if v4, ok := embeddedIPv4(a); ok {
			return v4.String(), nil
		}
		return "[" + a.String() + "]", nil
	}
	if strings.IndexByte(h, '%') >= 0 {
		// WHATWG decodes it; a rule written for the decoded name would
		// then miss the spelling the agent chose. Refuse instead.
		return "", fmt.Errorf("%w: a percent escape in host %q", ErrBadHost, h)
	}
	ascii := strings.ToLower(h)
	if !isASCII(h) || strings.Contains(ascii, "xn--") {
		a, err := lookupProfile.ToASCII(h)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", ErrBadHost, h, err)
		}
		ascii = a
	}
	// A name of host-name bytes alone (most) holds no forbidden rune and
	// passes the last test below: both are skipped (hostNameBytes).
	plain := onlyHostNameBytes(ascii)
	if !plain && strings.IndexFunc(ascii, isForbiddenDomainRune) >= 0 {
		return "", fmt.Errorf("%w: %q holds a character no host name may hold", ErrBadHost, h)
	}
	if endsInNumber(ascii) {
		v4, ok := parseIPv4(ascii)
		if !ok {
			return "", fmt.Errorf("%w: %q ends in a number but is no IPv4 address", ErrBadHost, h)
		}
		return v4, nil
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if ascii == "" || strings.HasPrefix(ascii, ".") || strings.HasSuffix(ascii, ".") || strings.Contains(ascii, "..") {
		return "", fmt.Errorf("%w: %q has an empty label", ErrBadHost, h)
	}
	if !plain && strings.Trim(ascii, hostNameCutset) != "" {
		return "", fmt.Errorf("%w: %q is not a host name", ErrBadHost, h)
	}
	return ascii, nil
}

// hostNameCutset are the bytes a host name is made of, after IDNA.
const hostNameCutset = "abcdefghijklmnopqrstuvwxyz0123456789-_."

// hostNameBytes is hostNameCutset as a table.
var hostNameBytes = func() (t [256]bool) {
	for i := range len(hostNameCutset) {
		t[hostNameCutset[i]] = true
	}
	return t
}()

// onlyHostNameBytes reports whether every byte of s is in hostNameCutset.
func onlyHostNameBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if !hostNameBytes[s[i]] {
			return false
		}
	}
	return true
}

// isForbiddenDomainRune is the WHATWG forbidden domain code points (and
// any rune outside ASCII left after IDNA).
func isForbiddenDomainRune(r rune) bool {
	return r <= ' ' || r >= 0x7f || strings.ContainsRune("#%/:<>?@[\\]^|", r)
}

// endsInNumber is the WHATWG "ends in a number checker": the last label
// (after one trailing dot) is all digits or an IPv4 number (0x1f, 017).
func endsInNumber(h string) bool {
	if h == "" {
		return false
	}
	// The last label, after one trailing dot, without splitting h.
	t := strings.TrimSuffix(h, ".")
	last := t[strings.LastIndexByte(t, '.')+1:]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok
}

// ipv4Number is the WHATWG IPv4 number parser: 0x… hexadecimal, 0…
// octal, else decimal; "0x" alone is 0. A value past 2^32 saturates (it is
// then refused by parseIPv4).
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		var d uint64
		switch c := s[i]; {
		case '0' <= c && c <= '9':
			d = uint64(c - '0')
		case 'a' <= c && c <= 'f':
			d = uint64(c-'a') + 10
		case 'A' <= c && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		if n = n*base + d; n > 1<<32 {
			n = 1<<32 + 1
		}
	}
	return n, true
}

// parseIPv4 is the WHATWG IPv4 parser (inet_aton's forms: a.b.c.d, a.b.c,
// a.b, a, each part decimal, octal or hex), answering dotted decimal.
func parseIPv4(h string) (string, bool) {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	var v uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return "", false
		}
		if i < len(parts)-1 {
			if n > 255 {
				return "", false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(5-len(parts))) {
			return "", false
		}
		v += n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String(), true
}

// isCanonicalHost reports, cheaply, a host that CanonicalHost returns
// unchanged: lower-case letters, digits, '-', '_' and '.', no empty label,
// and a last label starting with a letter (so it is no IPv4 number), or a
// dotted-decimal IPv4 address. A decision matches the canonical host
// against every rule and grant; this keeps each match from parsing again.
func isCanonicalHost(h string) bool {
	if h == "" || h[0] == '.' || h[len(h)-1] == '.' {
		return false
	}
	lastLabel := 0
	for i := 0; i < len(h); i++ {
		switch c := h[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '.':
			if h[i-1] == '.' {
				return false
			}
			lastLabel = i + 1
		default:
			return false
		}
	}
	if c := h[lastLabel]; 'a' <= c && c <= 'z' {
		return !strings.Contains(h, "xn--")
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Is4() && a.String() == h
}

// hostPattern canonicalises a rule's or a grant's host pattern: a literal
// host as CanonicalHost does (a block rule on "0x7f.1" holds for
// 127.0.0.1), a pattern with wildcards label by label, each label without
// one in its ASCII form.
func hostPattern(p string) string {
	if !hasMeta(p) {
		return hostOf(p)
	}
	p = strings.ToLower(p)
	if hasOtherDots(p) { // Replace allocates even when it replaces nothing
		p = dotsReplacer.Replace(p)
	}
	return strings.TrimSuffix(asciiHost(p), ".")
}

// dotsReplacer maps the full stops IDNA reads as '.' (ideographic,
// fullwidth, halfwidth) to '.', for patterns that IDNA cannot take whole.
var dotsReplacer = strings.NewReplacer("\u3002", ".", "\uff0e", ".", "\uff61", ".")

// hasOtherDots reports whether s holds one of the full stops dotsReplacer
// maps to '.', byte for byte as it finds them.
func hasOtherDots(s string) bool {
	return strings.Contains(s, "\u3002") || strings.Contains(s, "\uff0e") || strings.Contains(s, "\uff61")
}

// validGrantHost reports whether a canonicalised grant pattern is one a
// host grant may hold: a canonical host, or "*." and a canonical domain.
func validGrantHost(p string) bool {
	p = strings.TrimPrefix(p, "*.")
	h, err := CanonicalHost(p)
	return err == nil && h == p
}
