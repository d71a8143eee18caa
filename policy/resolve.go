package policy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Resolver looks a host name up (net.DefaultResolver is one); tests
// inject a fake.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// AddrCache resolves the host names of host targets where a rule needs
// addresses: a block or require_approval rule written as an address
// ("10.*", "169.254.169.254", "[::1]"), and the guard's "the gateway is
// not a target" (a name such as 127.0.0.1.nip.io reaching the gateway).
// Answers are kept for TTL, so a decision on a name seen recently costs
// no lookup; a name no rule needs addresses for is never looked up.
type AddrCache struct {
	Resolver Resolver
	TTL      time.Duration    // 0: DefaultAddrTTL
	Timeout  time.Duration    // one lookup's limit; 0: DefaultLookupTimeout
	Now      func() time.Time // nil: time.Now

	mu sync.Mutex
	m  map[string]addrEntry
}

// The defaults of AddrCache: short, so a name that changes its address
// is judged by the new one soon.
const (
	DefaultAddrTTL       = 30 * time.Second
	DefaultLookupTimeout = 3 * time.Second
	maxAddrEntries       = 4096
)

type addrEntry struct {
	hosts []string // canonical hosts (CanonicalHost) of the addresses
	at    time.Time
}

// ErrUnresolved is returned when a name's addresses cannot be learnt
// (not when the name does not exist): the decision then fails closed.
var ErrUnresolved = errors.New("the host's addresses could not be looked up")

// Lookup answers the canonical hosts ("127.0.0.1", "[::1]"; NAT64 and
// mapped forms as the IPv4 address they reach) a name resolves to. A
// name that does not exist resolves to none.
func (c *AddrCache) Lookup(ctx context.Context, host string) ([]string, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultAddrTTL
	}
	c.mu.Lock()
	if e, ok := c.m[host]; ok && now().Sub(e.at) < ttl {
		c.mu.Unlock()
		return e.hosts, nil
	}
	c.mu.Unlock()
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultLookupTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := c.Resolver.LookupNetIP(lctx, "ip", host)
	var dnsErr *net.DNSError
	if err != nil && !(errors.As(err, &dnsErr) && dnsErr.IsNotFound) {
		return nil, ErrUnresolved
	}
	var hosts []string
	for _, a := range addrs {
		s := a.Unmap().String()
		if a.Unmap().Is6() {
			s = "[" + a.WithZone("").String() + "]"
		}
		if h, err := CanonicalHost(s); err == nil {
			hosts = append(hosts, h)
		}
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxAddrEntries {
		c.m = map[string]addrEntry{} // a full cache starts over: never unbounded
	}
	c.m[host] = addrEntry{hosts: hosts, at: now()}
	c.mu.Unlock()
	return hosts, nil
}

// AddrNeeder is a Vetter that judges addresses (vaglio's "the gateway is
// not a target"): it says for which port it needs them.
type AddrNeeder interface {
	NeedsAddrs(port string) bool
}

// hostAddrs resolves a host target's name when a rule or the guard needs
// its addresses; nil when none does, when the host is an address or a
// loopback name already, or when the decider resolves nothing.
func (d *Decider) hostAddrs(ctx context.Context, c Capability, host HostTarget, rules []Rule) ([]string, error) {
	if d.Addrs == nil || !isLookupName(host.Host) {
		return nil, nil
	}
	need := false
	if v, ok := d.Vaglio.(AddrNeeder); ok && v.NeedsAddrs(host.Port) {
		need = true
	}
	for i := 0; i < len(rules) && !need; i++ {
		need = rules[i].Action != ActionApprove && rules[i].MatchesCapability(c.Name) && isAddrPattern(rules[i].Target)
	}
	if !need {
		return nil, nil
	}
	return d.Addrs.Lookup(ctx, host.Host)
}

// isLookupName reports a canonical host that is a name DNS answers for:
// not an address, not localhost or a name under it (loopback already).
func isLookupName(h string) bool {
	if h == "" || h[0] == '[' || h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	// The names reserved for documentation and tests (RFC 2606, 6761):
	// .invalid never resolves, .test and .example are not delegated, and
	// example.com, .net and .org answer IANA's addresses only.
	for _, r := range []string{"invalid", "test", "example", "example.com", "example.net", "example.org"} {
		if h == r || strings.HasSuffix(h, "."+r) {
			return false
		}
	}
	_, err := netip.ParseAddr(h)
	return err != nil
}

// isAddrPattern reports a rule's host pattern written as an address or
// an address glob ("10.*", "169.254.169.254", "[fd00::*]", "127.0.0.?").
func isAddrPattern(p string) bool {
	p = hostPattern(p)
	if p == "" {
		return false
	}
	if p[0] == '[' {
		return true
	}
	return strings.Trim(p, "0123456789.*?[]") == "" && strings.ContainsAny(p, "0123456789")
}
