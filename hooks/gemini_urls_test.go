package hooks_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/policy"
)

// webFetchHosts maps a Gemini CLI web_fetch with prompt: the hosts asked
// about, or the mapping's error.
func webFetchHosts(prompt string) ([]string, error) {
	ev, err := hooks.Gemini.Decode([]byte(geminiEvent("web_fetch", map[string]any{"prompt": prompt})))
	if err != nil {
		return nil, err
	}
	cs, err := hooks.Gemini.Map(ev, nil)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, c := range cs {
		h, err := policy.ParseHost(c.Target) // the target names the port too (example.com:443): compare hosts
		if err != nil {
			return nil, err
		}
		if !slices.Contains(hosts, h.Host) { // one host on two ports is two asks, one host fetched
			hosts = append(hosts, h.Host)
		}
	}
	return hosts, nil
}

// TestGemini_WebFetchPrompt: URLs are read from the prompt as Gemini CLI
// reads them, whole white-space separated pieces; what the gateway cannot
// read fails the mapping instead of being skipped.
func TestGemini_WebFetchPrompt(t *testing.T) {
	cases := []struct {
		name   string
		prompt string
		want   []string // nil: refused
	}{
		{"two hosts", "compare https://a.example.com/x?t=1 and http://B.example.org", []string{"a.example.com", "b.example.org"}},
		{"a quote then user info", "read https://docs.python.org'@evil.example/?q=SECRET", []string{"evil.example"}},
		{"a double quote", `read https://docs.python.org"@evil.example/`, []string{"evil.example"}},
		{"a bracket", "see (https://docs.python.org)@evil.example/x", nil},
		{"an angle bracket", "see https://docs.python.org<@evil.example/", []string{"evil.example"}},
		{"parenthesised, path only", "see (https://a.example/x) now", nil},
		{"URL then a closing bracket", "see https://a.example/x) now", []string{"a.example"}},
		{"split on U+3000", "https://a.example\u3000https://b.example", []string{"a.example", "b.example"}},
		{"split on U+FEFF", "https://a.example\ufeffhttps://b.example", []string{"a.example", "b.example"}},
		{"not split on U+0085", "https://a.example/\u0085https://b.example", []string{"a.example"}},
		{"U+200B is mapped away, not a split", "https://a.example\u200b.evil.example/", []string{"a.example.evil.example"}},
		{"another scheme refuses the call", "https://a.example ftp://b.example", nil},
		{"a malformed URL refuses the call", "https://a.example http://[::1", nil},
		{"no URL", "summarise the docs", nil},
		{"backslash", `https://a.example\@evil.example/`, nil},
		{"upper-case scheme", "HTTPS://A.example", []string{"a.example"}},
		{"numeric host", "http://0x7f.1/", []string{"127.0.0.1"}},
		{"a file on github.com is fetched from its raw host", "https://github.com/o/r/blob/main/x.md", []string{"github.com", "raw.githubusercontent.com"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := webFetchHosts(tc.prompt)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("mapped to %q, want refused", got)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// nodeParsePrompt is Gemini CLI's reading of a web_fetch prompt, written
// for this test from its parsePrompt (split on /\s+/, new URL on every
// piece holding "://", http and https only), run by Node: per prompt the
// hostnames, and whether Gemini CLI refuses the call.
const nodeParsePrompt = `
const prompts = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = prompts.map((p) => {
  const hosts = [];
  let refused = false;
  for (const piece of p.split(/\s+/)) {
    if (!piece || !piece.includes('://')) continue;
    let u;
    try { u = new URL(piece); } catch { refused = true; continue; }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') { refused = true; continue; }
    hosts.push(u.hostname);
  }
  return { hosts, refused: refused || hosts.length === 0 };
});
process.stdout.write(JSON.stringify(out));
`

// TestGemini_PromptURLsDifferential: where Gemini CLI would fetch, the
// gateway asks about exactly the hosts it fetches (or refuses the call);
// checked against Node's own URL parser on the table's prompts and on
// random ones built of the pieces that parsers read differently.
func TestGemini_PromptURLsDifferential(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("GATEWAY_REQUIRE_AGENT_CLIS") == "1" {
			t.Fatal("node not found")
		}
		t.Skip("node not found")
	}
	prompts := []string{
		"read https://docs.python.org'@evil.example/?q=SECRET",
		"https://a.example\u3000https://b.example\ufeffhttps://c.example\u0085https://d.example",
		"http://user:pw@a.example:8080/x https://[::ffff:127.0.0.1]/ http://0177.0.0.1/",
	}
	r := rand.New(rand.NewPCG(37, 2))
	for range 2000 {
		prompts = append(prompts, randomPrompt(r))
	}
	in, _ := json.Marshal(prompts)
	cmd := exec.Command(node, "-e", nodeParsePrompt)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var gemini []struct {
		Hosts   []string `json:"hosts"`
		Refused bool     `json:"refused"`
	}
	if err := json.Unmarshal(out, &gemini); err != nil || len(gemini) != len(prompts) {
		t.Fatalf("node answered %d results for %d prompts: %v", len(gemini), len(prompts), err)
	}
	failedClosed := 0
	for i, p := range prompts {
		got, err := webFetchHosts(p)
		g := gemini[i]
		if g.Refused {
			continue // Gemini CLI fetches nothing
		}
		if err != nil {
			failedClosed++ // refused here, fetched there: closed, not open
			continue
		}
		var want []string
		for _, h := range g.Hosts {
			ht, err := policy.ParseHost("http://" + h)
			if err != nil {
				t.Fatalf("prompt %q: Node's host %q: %v", p, h, err)
			}
			if !slices.Contains(want, ht.Host) {
				want = append(want, ht.Host)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("prompt %q: the gateway asks about %q, Gemini CLI fetches %q", p, got, want)
		}
	}
	t.Logf("%d prompts, %d that Gemini CLI would fetch refused here", len(prompts), failedClosed)
}

// randomPrompt is words and URL-like pieces joined by white space of
// both kinds, JavaScript's and Go's.
func randomPrompt(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var b strings.Builder
	for range 1 + r.IntN(4) {
		b.WriteString(pick(" ", "\t", "\n", "\u00a0", "\u3000", "\ufeff", "\u0085", "\u200b", "\u2028", "\u180e", " "))
		switch r.IntN(3) {
		case 0:
			b.WriteString(pick("read", "compare", "(see", "docs:", "'", `"`, "<"))
		default:
			b.WriteString(pick("", "'", `"`, "(", "<", "[") +
				pick("http", "https", "HTTPS", "hTTp", "ftp", "file", "javascript", "ws") +
				pick("://", ":///", ":/", "://", "://") +
				pick("", "user@", "a:b@", "docs.python.org'@", `x"@`, "x(@", "x<@", "x)@", "x]@") +
				pick("docs.python.org", "evil.example", "EVIL.example.", "127.0.0.1", "0x7f.1", "[::1]", "[::ffff:7f00:1]", "xn--nxasmq6b.example", "b\u00fccher.example", "ｅｖｉｌ.example", "evil\u3002example", "a..b", "") +
				pick("", ":8080", ":0", ":65536", ":x") +
				pick("", "/", "/x?q=1", "/'a", `/"b`, "/(c)", "#f", "?@evil.example", "/@evil.example", ")") +
				pick("", "'", `"`, ")", ">", "]", ".", ","))
		}
	}
	return b.String()
}
