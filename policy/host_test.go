package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestParseHost: every spelling of a host reads as the host a browser,
// Node and curl reach, and what they would read otherwise is refused.
func TestParseHost(t *testing.T) {
	cases := []struct {
		target, host, port string
	}{
		// A scheme without "//" (WHATWG skips any run of slashes).
		{"http:evil.com", "evil.com", "80"},
		{"http:/evil.com/x", "evil.com", "80"},
		{"https:///evil.com", "evil.com", "443"},
		{"HTTP:Evil.COM:8080", "evil.com", "8080"},
		{"ws:evil.com", "evil.com", "80"},
		{"wss://evil.com", "evil.com", "443"},
		{"ftp:evil.com", "evil.com", "21"},
		{"http:8080", "0.0.31.144", "80"}, // a number is an IPv4 address, as in Node
		// host:port without a scheme.
		{"localhost:8080", "localhost", "8080"},
		{"evil.com", "evil.com", ""},
		{"evil.com:", "evil.com", ""},
		{"user:pw@evil.com:0443/x", "evil.com", "443"},
		{"ssh://git.example.com:22/x", "git.example.com", "22"},
		// IDNA mapping before the trailing dot is dropped.
		{"evil.com。", "evil.com", ""},
		{"https://evil.com。/", "evil.com", "443"},
		{"evil．com", "evil.com", ""},
		{"evil｡com", "evil.com", ""},
		{"ｅｖｉｌ.ｃｏｍ", "evil.com", ""},
		{"EVIL.com.", "evil.com", ""},
		{"münchen.de", "xn--mnchen-3ya.de", ""},
		{"XN--MNCHEN-3YA.de", "xn--mnchen-3ya.de", ""},
		{"a_b.example", "a_b.example", ""},
		// Every IPv4 form inet_aton and WHATWG read.
		{"127.0.0.1", "127.0.0.1", ""},
		{"127.1", "127.0.0.1", ""},
		{"127.0.1", "127.0.0.1", ""},
		{"2130706433", "127.0.0.1", ""},
		{"0x7f000001", "127.0.0.1", ""},
		{"0X7F.1", "127.0.0.1", ""},
		{"0x7f.0.0.1", "127.0.0.1", ""},
		{"0177.0.0.1", "127.0.0.1", ""},
		{"017700000001", "127.0.0.1", ""},
		{"0x7f.1.", "127.0.0.1", ""},
		{"http://0x7f.1:8080/", "127.0.0.1", "8080"},
		{"１２７.０.０.１", "127.0.0.1", ""},
		{"127。0。0。1", "127.0.0.1", ""},
		{"0", "0.0.0.0", ""},
		{"0x", "0.0.0.0", ""},
		{"4294967295", "255.255.255.255", ""},
		{"169.254.169.254", "169.254.169.254", ""},
		{"0xa9fea9fe", "169.254.169.254", ""},
		// IPv6, and IPv4-mapped IPv6 as the IPv4 address it reaches.
		{"[::1]", "[::1]", ""},
		{"http://[::1]:8080/", "[::1]", "8080"},
		{"[0:0:0:0:0:0:0:1]", "[::1]", ""},
		{"[::ffff:127.0.0.1]", "127.0.0.1", ""},
		{"http://[::FFFF:7f00:1]/", "127.0.0.1", "80"},
		{"[0:0:0:0:0:ffff:a9fe:a9fe]", "169.254.169.254", ""},
		{"[2001:DB8::1]", "[2001:db8::1]", ""},
	}
	for _, tc := range cases {
		t.Run(tc.target, func(t *testing.T) {
			h, err := ParseHost(tc.target)
			if err != nil {
				t.Fatalf("ParseHost(%q): %v", tc.target, err)
			}
			if h.Host != tc.host || h.Port != tc.port {
				t.Errorf("ParseHost(%q) = %q port %q, want %q port %q", tc.target, h.Host, h.Port, tc.host, tc.port)
			}
			if got := hostOf(tc.target); got != tc.host {
				t.Errorf("hostOf(%q) = %q, want %q", tc.target, got, tc.host)
			}
			if hostOf(h.Host) != h.Host {
				t.Errorf("the canonical %q is not a fixed point", h.Host)
			}
		})
	}
}

// TestParseHost_Refused: what parsers could read two ways, or what names
// no host, is refused (HTTP 400 on a request).
func TestParseHost_Refused(t *testing.T) {
	for _, target := range []string{
		"", "   ", "https://", "http:", "http:///", `http://good.com\@evil.com`, `http:\\evil.com`,
		"http://%65vil.com/", "evil .com", "ev\til.com", "ev\nil.com", "evil.com\x7f",
		"evil.123", "1.2.3.4.5", "256.256.256.256", "1.2.3.256", "4294967296", "0x100000000", "08.1.2.3",
		"evil..com", ".evil.com", "evil.com..", "http://evil.com:65536/", "https://EVIL.com:x/", "http://evil.com:-1/",
		"[::1", "[::1]x", "[fe80::1%25eth0]", "[1.2.3.4]", "[::1.2.3]",
		"javascript:alert(1)", "foo:bar", "file:///etc/passwd", "file://evil.com/x",
		"ex\u202eample.com", "evil.com／x", "xn--zz.com", "evil<.com",
	} {
		if h, err := ParseHost(target); err == nil {
			t.Errorf("ParseHost(%q) = %+v, want an error", target, h)
		} else if !errors.Is(err, ErrBadHost) {
			t.Errorf("ParseHost(%q): %v does not wrap ErrBadHost", target, err)
		}
	}
}

// TestHosts_RulesAndGrantsSeeTheCanonicalHost: a block rule on a host
// holds for every spelling of it, and Allow always on one spelling grants
// the host, never a misread part of the target.
func TestHosts_RulesAndGrantsSeeTheCanonicalHost(t *testing.T) {
	n := Normalizer{}
	spellings := map[string][]string{
		"evil.com":        {"http:evil.com", "evil.com。", "https://EVIL.COM./x", "ｅｖｉｌ.com", "http:/evil.com"},
		"127.0.0.1":       {"127.1", "0x7f.1", "2130706433", "0177.0.0.1", "[::ffff:127.0.0.1]", "http://[::ffff:7f00:1]:80/", "１２７.０.０.１"},
		"169.254.169.254": {"0xa9fea9fe", "[::ffff:169.254.169.254]", "169.16689662"},
	}
	for host, targets := range spellings {
		for _, pattern := range []string{host, "0x7f.1", "2130706433", host + "。"} {
			if p, _ := CanonicalHost(pattern); p != host && pattern != host+"。" {
				continue
			}
			for _, target := range targets {
				if !n.MatchRule(KindHost, pattern, target) {
					t.Errorf("rule %q does not match %q", pattern, target)
				}
				if !n.MatchGrant(KindHost, pattern, target) {
					t.Errorf("grant %q does not cover %q", pattern, target)
				}
			}
		}
		for _, target := range targets {
			if g, _ := n.GrantTarget(KindHost, target, ""); g != host {
				t.Errorf("GrantTarget(%q) = %q, want %q", target, g, host)
			}
		}
	}
	if g, _ := n.GrantTarget(KindHost, "http:good.com", ""); g != "good.com" {
		t.Errorf("Allow always on http:good.com grants %q", g)
	}
	if n.MatchGrant(KindHost, "good.com", "http:evil.com") || n.MatchGrant(KindHost, "http", "http:evil.com") {
		t.Error("a grant on good.com or http covers http:evil.com")
	}
	if !n.MatchRule(KindHost, "*.evil.com。", "https://a.evil.com/") {
		t.Error("a wildcard rule with an ideographic full stop does not match")
	}
}

// nodeURL is what Node's new URL read of one input.
type nodeURL struct {
	OK       bool   `json:"ok"`
	Host     string `json:"host"`
	Port     string `json:"port"`
	Protocol string `json:"protocol"`
}

// runNode parses each input with Node's new URL (testdata/whatwg_url.js).
func runNode(t testing.TB, inputs []string) []nodeURL {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the differential test against new URL needs it")
	}
	in, _ := json.Marshal(inputs)
	cmd := exec.Command(node, "testdata/whatwg_url.js")
	cmd.Stdin = bytes.NewReader(in)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v: %s", err, stderr.String())
	}
	var res []nodeURL
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != len(inputs) {
		t.Fatalf("node answered %d results for %d inputs: %v", len(res), len(inputs), err)
	}
	return res
}

// browserURL is the URL a tool would be given for a target: the target
// itself when it has a special scheme, "http://" and the target when it
// has none (what curl does); "" for the other schemes, which Node reads
// as opaque and no browser fetches.
func browserURL(target string) string {
	scheme, after, ok := cutScheme(target)
	switch {
	case !ok:
		return "http://" + target
	case specialPorts[scheme] != "":
		return target
	case scheme == "file" || strings.HasPrefix(after, "//"):
		return ""
	case isPortThenPath(after) || strings.Contains(authorityOf(target), "@"):
		return "http://" + target
	}
	return ""
}

// nodeCanonical is the host Node reaches, in the gateway's canonical
// form: one trailing dot dropped, an IPv4-mapped IPv6 address unmapped.
func nodeCanonical(host string) string {
	if strings.HasPrefix(host, "[") {
		// Node keeps IPv4-compatible and NAT64 forms as IPv6; the gateway
		// reads them as the IPv4 address they reach (TestCanonicalHost_EmbeddedIPv4).
		if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			if v4, ok := embeddedIPv4(a); ok {
				return v4.String()
			}
		}
		return host
	}
	return strings.TrimSuffix(host, ".")
}

// genHostTargets builds n host targets from the spellings that have
// fooled host checks: schemes with and without slashes, user info, IDNA
// dots and widths, every IPv4 form, IPv6 and mapped IPv4, ports, paths.
func genHostTargets(r *rand.Rand, n int) []string {
	pick := func(list ...string) string { return list[r.IntN(len(list))] }
	ipv4 := func() string {
		addr := [4]uint32{r.Uint32N(256), r.Uint32N(256), r.Uint32N(256), r.Uint32N(256)}
		if r.IntN(3) == 0 {
			addr = [4]uint32{127, 0, 0, r.Uint32N(3)}
		}
		v := addr[0]<<24 | addr[1]<<16 | addr[2]<<8 | addr[3]
		parts := 1 + r.IntN(4)
		var nums []uint64
		for i := 0; i < parts-1; i++ {
			nums = append(nums, uint64(addr[i]))
		}
		nums = append(nums, uint64(v)&(1<<(8*(5-parts))-1))
		if r.IntN(8) == 0 { // out of range on purpose
			nums[r.IntN(len(nums))] += 256
		}
		var out []string
		for _, x := range nums {
			switch r.IntN(4) {
			case 0:
				out = append(out, "0x"+strconv.FormatUint(x, 16))
			case 1:
				out = append(out, "0"+strconv.FormatUint(x, 8))
			case 2:
				out = append(out, "0X"+strings.ToUpper(strconv.FormatUint(x, 16)))
			default:
				out = append(out, strconv.FormatUint(x, 10))
			}
		}
		s := strings.Join(out, ".")
		if r.IntN(5) == 0 {
			s += "."
		}
		return s
	}
	host := func() string {
		switch r.IntN(6) {
		case 0, 1:
			return ipv4()
		case 2:
			return pick("[::1]", "[::ffff:127.0.0.1]", "[::FFFF:7f00:1]", "[0:0:0:0:0:ffff:a9fe:a9fe]",
				"[2001:db8::1]", "[::]", "[::1.2.3.4]", "[fe80::1%25lo]", "[::ffff:1.2.3]")
		case 3:
			return pick("１２７.０.０.１", "127。0。0。1", "evil.123", "1.2.3.4.5", "0x", "0x.0x", "256.256",
				"4294967296", "4294967295", "09", "0x1g", "1..2", "%31.2.3.4")
		}
		h := pick("evil.com", "EVIL.com", "good.example", "münchen.de", "XN--MNCHEN-3YA.de", "раураl.com",
			"a_b.com", "-x.com", "ab--c.com", "localhost", "sub.localhost", "xn--zz.com", "ß.de", "ｅｖｉｌ.com")
		switch r.IntN(6) {
		case 0:
			h += pick(".", "。", "．", "｡", "..")
		case 1:
			h = strings.NewReplacer(".", pick("。", "．", "｡")).Replace(h)
		case 2:
			h = pick("", ".", "a.") + h
		}
		return h
	}
	var out []string
	for len(out) < n {
		s := pick("http://", "https://", "HTTP://", "http:", "http:/", "http:///", "https:", "ws://", "wss:",
			"ftp://", "", "", "", "ssh://", "foo:") +
			pick("", "", "", "user@", "user:pw@", "a@b@") +
			host() +
			pick("", "", "", ":", ":80", ":8080", ":0080", ":65536", ":x") +
			pick("", "", "/", "/x?y#z", "?q", "#f", "/a@b")
		out = append(out, s)
	}
	return out
}

// TestParseHost_NodeDifferential: over generated targets, wherever Node's
// new URL (the WHATWG parser of browsers, and what curl follows) reaches
// a host, the gateway reads the same host and port, and a block rule on
// that host holds. Where the gateway refuses, nothing is reached through
// it; where Node refuses and the gateway does not, no tool reaches
// anything.
func TestParseHost_NodeDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 1))
	targets := append(genHostTargets(r, 4000),
		"http:evil.com", "http://evil.com。/", "http://0x7f.1:8080", "http://[::ffff:127.0.0.1]/", "evil.com。",
		"http://１２７.０.０.１/", "localhost:8080", "http://2130706433/", "https://evil.com:0443/")
	var urls []string
	var idx []int
	for i, target := range targets {
		if u := browserURL(target); u != "" {
			urls = append(urls, u)
			idx = append(idx, i)
		}
	}
	res := runNode(t, urls)
	n := Normalizer{}
	agreed, refused := 0, 0
	for k, nr := range res {
		target := targets[idx[k]]
		h, err := ParseHost(target)
		if err != nil {
			refused++
			continue
		}
		if !nr.OK {
			continue
		}
		want := nodeCanonical(nr.Host)
		port := nr.Port
		if port == "" {
			port = specialPorts[strings.TrimSuffix(nr.Protocol, ":")]
		}
		if h.Port == "" { // no scheme, no port: the target stands for every port
			port = ""
		}
		if h.Host != want || h.Port != port {
			t.Errorf("%q: gateway reads %q port %q, Node (%q) reaches %q port %q", target, h.Host, h.Port, urls[k], nr.Host, port)
			continue
		}
		if !n.MatchRule(KindHost, want, target) || !n.MatchGrant(KindHost, want, target) {
			t.Errorf("%q: a rule or grant on %q does not hold", target, want)
		}
		agreed++
	}
	t.Logf("%d targets: %d read as Node reads them, %d refused by the gateway", len(urls), agreed, refused)
	if agreed < len(urls)/4 {
		t.Errorf("only %d of %d targets compared: the generator has drifted", agreed, len(urls))
	}
}

// FuzzParseHost: ParseHost never panics; what it accepts is canonical (a
// fixed point), matched by a rule and a grant on itself, and never the
// scheme of a URL.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"http:evil.com", "evil.com。", "0x7f.1", "[::ffff:127.0.0.1]", "http://[::1]:8080/",
		"user@evil.com:80", "１２７.０.０.１", "münchen.de", "localhost:8080", "2130706433", "ssh://h/x"} {
		f.Add(s)
	}
	n := Normalizer{}
	f.Fuzz(func(t *testing.T, target string) {
		h, err := ParseHost(target)
		if err != nil {
			return
		}
		if c, err := CanonicalHost(h.Host); err != nil || c != h.Host {
			t.Fatalf("%q: host %q is not canonical (%q, %v)", target, h.Host, c, err)
		}
		if hostOf(target) != h.Host || !n.MatchRule(KindHost, h.Host, target) || !n.MatchGrant(KindHost, h.Host, target) {
			t.Fatalf("%q: rules and grants do not see host %q", target, h.Host)
		}
		if s, _, ok := cutScheme(target); ok && specialPorts[s] != "" && h.Host == s {
			t.Fatalf("%q: the scheme was read as the host", target)
		}
		if g, _ := n.GrantTarget(KindHost, target, ""); !validGrantHost(g) {
			t.Fatalf("%q: Allow always would grant %q", target, g)
		}
	})
}

// TestCanonicalHost_EmbeddedIPv4: an IPv6 address that reaches an IPv4
// address (mapped, IPv4-compatible, translated, NAT64) is that IPv4
// address, so a block rule on 127.0.0.1 or 169.254.169.254 holds for it.
func TestCanonicalHost_EmbeddedIPv4(t *testing.T) {
	for in, want := range map[string]string{
		"[::ffff:127.0.0.1]": "127.0.0.1", "[::127.0.0.1]": "127.0.0.1", "[::7f00:1]": "127.0.0.1",
		"[::ffff:0:a9fe:a9fe]": "169.254.169.254", "[64:ff9b::127.0.0.1]": "127.0.0.1",
		"[64:ff9b::a9fe:a9fe]": "169.254.169.254", "[64:ff9b:1::a00:1]": "10.0.0.1",
		"[::1]": "[::1]", "[::]": "[::]", "[2001:db8::1]": "[2001:db8::1]", "[64:ff9b:2::1]": "[64:ff9b:2::1]",
	} {
		got, err := CanonicalHost(in)
		if err != nil || got != want {
			t.Errorf("CanonicalHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestGrantTarget_NoPublicSuffix: Allow always never offers, and an agent
// may never suggest, "*." and a public suffix (co.uk, github.io).
func TestGrantTarget_NoPublicSuffix(t *testing.T) {
	var n Normalizer
	for _, tc := range []struct{ target, suggested string }{
		{"evil.co.uk", "*.co.uk"}, {"a.github.io", "*.github.io"}, {"x.s3.amazonaws.com", "*.s3.amazonaws.com"},
		{"a.b.com.au", "*.com.au"}, {"x.appspot.com", "*.appspot.com"},
	} {
		if got, ok := n.GrantTarget(KindHost, tc.target, tc.suggested); ok {
			t.Errorf("GrantTarget(%q, %q) = %q, taken", tc.target, tc.suggested, got)
		}
		for _, sc := range n.Scopes(KindHost, tc.target, "") {
			if sc == tc.suggested {
				t.Errorf("Scopes(%q) offers %q", tc.target, sc)
			}
		}
	}
	if got, ok := n.GrantTarget(KindHost, "api.example.co.uk", "*.example.co.uk"); !ok || got != "*.example.co.uk" {
		t.Errorf("a registrable domain under a public suffix: %q, %v", got, ok)
	}
	if sc := n.Scopes(KindHost, "me.github.io", ""); len(sc) != 1 {
		t.Errorf("Scopes(me.github.io) = %v, want the host only", sc)
	}
}

// TestGrantTarget_GlobRequestGrantsItselfOnly: Allow always on a glob
// search grants that search, never the files the glob could match.
func TestGrantTarget_GlobRequestGrantsItselfOnly(t *testing.T) {
	n := Normalizer{Home: "/home/u"}
	for _, target := range []string{"/w/**/*.go", "/w/*", "/home/u/src/*.[ch]", "~/notes/{a,b}.md"} {
		g, taken := n.GrantTarget(KindPathGlob, target, "/w/**")
		if taken {
			t.Errorf("GrantTarget(%q) took the suggestion", target)
		}
		if sc := n.Scopes(KindPathGlob, target, "/w/**"); len(sc) != 1 || sc[0] != g {
			t.Errorf("Scopes(%q) = %v, want [%q]", target, sc, g)
		}
		if !n.MatchGrant(KindPathGlob, g, target) {
			t.Errorf("grant %q does not cover its own search %q", g, target)
		}
		for _, read := range []string{"/w/a.go", "/w/x/a.go", "/home/u/src/a.c", "/home/u/notes/a.md", "/w/b"} {
			if n.MatchGrant(KindPathGlob, g, read) {
				t.Errorf("grant %q from the search %q allows the read %q", g, target, read)
			}
		}
	}
}

// TestHostNameBytes: the shortcut of CanonicalHost for a name of
// host-name bytes alone skips two tests that such a name passes: no byte
// of the table is a forbidden domain rune, and strings.Trim with the
// cutset leaves nothing of a string of them; every other byte is outside
// the table, so the tests run for any other name.
func TestHostNameBytes(t *testing.T) {
	for b := range 256 {
		in := strings.IndexByte(hostNameCutset, byte(b)) >= 0
		if hostNameBytes[b] != in {
			t.Fatalf("byte %#x: table %v, cutset %v", b, hostNameBytes[b], in)
		}
		if in && (isForbiddenDomainRune(rune(b)) || strings.Trim(string(rune(b)), hostNameCutset) != "") {
			t.Fatalf("byte %q is in the table but fails a test the shortcut skips", rune(b))
		}
	}
	for _, s := range []string{"api.example.com", "edge.svc3.example.org", "a_b-c.d", "", "Ex.com", "a b", "a/b", "é.com", "a\x00"} {
		want := strings.IndexFunc(s, isForbiddenDomainRune) < 0 && strings.Trim(s, hostNameCutset) == ""
		if got := onlyHostNameBytes(s); got && !want {
			t.Fatalf("onlyHostNameBytes(%q) = true, but the tests it skips refuse it", s)
		}
	}
}
