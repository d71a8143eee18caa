package policy_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/vaglio"
)

// fakeResolver answers from a table and counts lookups; no real DNS.
type fakeResolver struct {
	mu    sync.Mutex
	names map[string][]string
	calls map[string]int
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[host]++
	if host == "servfail.dev" {
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
	}
	as, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, a := range as {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

func resolvingDecider(t *testing.T, rules ...policy.Rule) (*policy.Decider, *fakeResolver, *time.Time) {
	t.Helper()
	f := &fakeResolver{calls: map[string]int{}, names: map[string][]string{
		"127.0.0.1.nip.io": {"127.0.0.1"}, "v6loop.dev": {"::1"}, "nat64.dev": {"64:ff9b::7f00:1"},
		"metadata.evil.dev": {"169.254.169.254"}, "internal.evil.dev": {"93.184.216.34", "10.1.2.3"},
		"public.dev": {"93.184.216.34"}, "mapped.dev": {"::ffff:10.0.0.7"},
	}}
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	v := vaglio.New(vaglio.Options{Home: "/home/r", Own: vaglio.Own{Endpoints: []vaglio.Endpoint{{Host: "localhost", Port: "8080"}}}})
	t.Cleanup(func() { v.Close() })
	d := &policy.Decider{Rules: indexed(rules...), Vaglio: v, Norm: testNorm,
		Addrs: &policy.AddrCache{Resolver: f, Now: func() time.Time { return now }}}
	return d, f, &now
}

// TestHosts_NamesResolvingToTheGateway: a name that resolves to loopback
// (127.0.0.1.nip.io, [::1], NAT64 of 127.0.0.1) on the gateway's port,
// or with no port, is the gateway itself; another port is not, and a
// loopback host with a port other than the gateway's is a local server.
func TestHosts_NamesResolvingToTheGateway(t *testing.T) {
	d, _, _ := resolvingDecider(t)
	for _, tc := range []struct {
		target string
		denied bool
	}{
		{"http://127.0.0.1.nip.io:8080/v1/requests", true},
		{"127.0.0.1.nip.io", true},
		{"127.0.0.1.nip.io:3000", false},
		{"http://v6loop.dev:8080/", true},
		{"nat64.dev:8080", true},
		{"[64:ff9b::7f00:1]:8080", true},
		{"[::127.0.0.1]:8080", true},
		{"http://localhost:3000/", false},
		{"localhost:3000", false},
		{"localhost:8080", true},
		{"localhost", true}, // no port: every port, the gateway's too
		{"public.dev:8080", false},
	} {
		dec := decide(t, d, input(policy.Full, "network:http", tc.target))
		if got := dec.Outcome == policy.Denied && dec.BlockedBy == policy.BlockedByGuard; got != tc.denied {
			t.Errorf("%q: %s (%s), want denied by the guard: %v", tc.target, dec.Outcome, dec.Reason, tc.denied)
		}
	}
}

// TestHosts_AddressBlockRulesJudgeEveryAddress: a block rule on an
// address or range holds for a name resolving to it, whichever of its
// addresses it is; an approve rule on an address never approves a name.
func TestHosts_AddressBlockRulesJudgeEveryAddress(t *testing.T) {
	d, f, now := resolvingDecider(t, rule("network:http", "169.254.*", policy.ActionBlock),
		rule("network:http", "10.*", policy.ActionBlock), rule("network:http", "93.184.216.34", policy.ActionApprove))
	for _, tc := range []struct {
		target  string
		blocked bool
	}{
		{"https://metadata.evil.dev/latest/meta-data", true},
		{"https://internal.evil.dev/", true}, // one public, one private address
		{"https://mapped.dev/", true},
		{"https://public.dev/", false},
		{"https://nosuch.dev/", false},
	} {
		dec := decide(t, d, input(policy.Supervised, "network:http", tc.target))
		if got := dec.Outcome == policy.Denied && dec.BlockedBy == policy.BlockedByPolicy; got != tc.blocked {
			t.Errorf("%q: %s (%s), want blocked: %v", tc.target, dec.Outcome, dec.Reason, tc.blocked)
		}
	}
	if dec := decide(t, d, input(policy.Supervised, "network:http", "https://public.dev/")); dec.Outcome == policy.Allowed {
		t.Errorf("an approve rule on an address approved a name resolving to it: %s", dec.Reason)
	}
	// Cached: the same name again costs no lookup until the TTL passes.
	before := f.calls["metadata.evil.dev"]
	decide(t, d, input(policy.Supervised, "network:http", "metadata.evil.dev"))
	if f.calls["metadata.evil.dev"] != before {
		t.Errorf("looked up again within the TTL")
	}
	*now = now.Add(policy.DefaultAddrTTL + time.Second)
	decide(t, d, input(policy.Supervised, "network:http", "metadata.evil.dev"))
	if f.calls["metadata.evil.dev"] != before+1 {
		t.Errorf("not looked up again after the TTL: %d calls", f.calls["metadata.evil.dev"])
	}
	// A lookup that fails (not "no such host") fails closed.
	if dec := decide(t, d, input(policy.Full, "network:http", "servfail.dev")); dec.Outcome != policy.Denied {
		t.Errorf("unresolvable: %s (%s)", dec.Outcome, dec.Reason)
	}
}

// TestHosts_ResolvedOnlyWhereNeeded: with no rule on an address, a name
// on a port other than the gateway's is never looked up, and names
// reserved for documentation never are.
func TestHosts_ResolvedOnlyWhereNeeded(t *testing.T) {
	d, f, _ := resolvingDecider(t, rule("network:http", "*.evil.dev", policy.ActionBlock))
	for _, target := range []string{"https://public.dev/", "public.dev:3000", "http://api.example.com:8080/", "x.test", "y.invalid"} {
		decide(t, d, input(policy.Full, "network:http", target))
	}
	for name, n := range f.calls {
		t.Errorf("looked up %s %d times", name, n)
	}
	if _, err := (&policy.AddrCache{Resolver: f}).Lookup(context.Background(), "servfail.dev"); !errors.Is(err, policy.ErrUnresolved) {
		t.Errorf("servfail: %v", err)
	}
}
