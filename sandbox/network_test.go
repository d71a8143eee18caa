package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// fakeDecider allows the targets in allowed and records every question.
type fakeDecider struct {
	mu      sync.Mutex
	allowed map[string]bool
	asked   []string
}

func (d *fakeDecider) decide(_ context.Context, target, _ string) (bool, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked = append(d.asked, target)
	if d.allowed[target] {
		return true, "", nil
	}
	return false, "rule #7 blocks it", nil
}

// netChild starts argv with the proxy and the API bridge served, the API
// bridge in front of a fake gateway.
func (m machine) netChild(t *testing.T, d *fakeDecider, noNS bool, argv ...string) (string, int) {
	t.Helper()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "gateway saw %s", r.URL.Path)
	}))
	t.Cleanup(gw.Close)
	base, _ := url.Parse(gw.URL)
	var out strings.Builder
	var mu sync.Mutex
	w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
	c := Config{Argv: argv, Dir: m.ws, Rules: m.rules(t, vaglio0()), Network: true, NoNamespace: noNS,
		Env:       []string{"HOME=" + m.home, "PATH=/usr/local/bin:/usr/bin:/bin"},
		ProxyVars: []string{"http_proxy", "https_proxy", "HTTPS_PROXY", "PROXY_URL"}, APIVars: []string{"GATEWAY_URL"},
		Stdout: w, Stderr: w}
	ch, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Decide: d.decide, Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "loopback-name.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, fmt.Errorf("no such host %s", host)
	}}
	go func() { _ = p.Serve(ch.Proxy) }()
	go func() { _ = http.Serve(ch.API, APIBridge(base)) }()
	code := ch.Wait()
	mu.Lock()
	defer mu.Unlock()
	return out.String(), code
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// upstream is a server outside the sandbox on the host's loopback.
func upstream(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "upstream-body")
	}))
	t.Cleanup(srv.Close)
	return srv, strings.TrimPrefix(srv.URL, "http://")
}

// TestProxyDecidesEveryRequest: curl through the proxy gets 403 naming
// the reason on a denied host, the body on an allowed one; a name that
// resolves to loopback is judged as the address.
func TestProxyDecidesEveryRequest(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	_, up := upstream(t)
	d := &fakeDecider{allowed: map[string]bool{up: true, "loopback-name.test:1": true}}
	curl := tool(t, "curl") + ` -x "$http_proxy" --noproxy ''`
	script := fmt.Sprintf(`%[1]s -sS -o /dev/null -w '%%{http_code}\n' http://blocked.test/ ; %[1]s -sS http://%[2]s/ ; echo; %[1]s -sS -o /dev/null -w '%%{http_code}\n' http://loopback-name.test:1/ ; %[1]s -sS https://blocked.test/ ; echo "https exit $?"`, curl, up)
	out, _ := m.netChild(t, d, false, tool(t, "bash"), "-c", script)
	want := []string{"403\n", "upstream-body\n", "403\n", "https exit 56"}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !strings.Contains(strings.Join(d.asked, " "), "127.0.0.1:1") {
		t.Errorf("loopback-name.test was not judged as 127.0.0.1: asked %v", d.asked)
	}
}

// directScript tries TCP to every port of the namespace's loopback
// (the two listeners excepted), the proxy's port on other loopback
// addresses, and the host's own addresses; it prints each success.
const directScript = `
import os, socket, sys, urllib.parse
proxy = urllib.parse.urlparse(os.environ['PROXY_URL'])
api = urllib.parse.urlparse(os.environ['GATEWAY_URL'])
own = {proxy.port, api.port}
targets = [('127.0.0.1', p) for p in range(1, 65536) if p not in own]
targets += [('127.0.0.2', proxy.port), ('127.0.0.2', api.port), ('::1', proxy.port)]
targets += [(h, int(p)) for h, p in (a.rsplit(':', 1) for a in sys.argv[1:])]
ok = 0
for h, p in targets:
    s = socket.socket(socket.AF_INET6 if ':' in h else socket.AF_INET)
    s.settimeout(2)
    try:
        s.connect((h, p))
        if s.getsockname() != s.getpeername():  # not TCP's self-connection
            print('connected', h, p); ok += 1
    except OSError:
        pass
    s.close()
print('tried', len(targets), 'connected', ok)
`

// TestDirectConnectionsFail: ignoring the proxy reaches nothing, on any
// port, whether in the namespace or, without one, under Landlock's port
// rules (where the proxy's port on another address is refused too).
func TestDirectConnectionsFail(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	_, up := upstream(t)
	args := []string{tool(t, "python3"), "-c", directScript, up}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				args = append(args, n.IP.String()+":22", n.IP.String()+":80", n.IP.String()+":"+strings.Split(up, ":")[1])
			}
		}
	}
	out, code := m.netChild(t, &fakeDecider{}, false, args...)
	if code != 0 || !strings.Contains(out, " connected 0\n") {
		t.Fatalf("namespace: exit %d:\n%s", code, out)
	}
	if EffectiveABI(0) < 4 {
		t.Skip("Landlock ABI < 4: no TCP rules, the fallback without a namespace cannot run here")
	}
	// Without a namespace only the two ports are reachable, and only on
	// the loopback; the scan of 127.0.0.1 here is the host's loopback.
	script := `import os, socket, urllib.parse
proxy = urllib.parse.urlparse(os.environ['PROXY_URL']); api = urllib.parse.urlparse(os.environ['GATEWAY_URL'])
for h, p in [(%q, %s), ('127.0.0.1', 22), ('127.0.0.1', 5432)]:
    s = socket.socket(); s.settimeout(2)
    try: s.connect((h, p)); print('connected', h, p)
    except OSError as e: print('refused', h, p, e.errno)
print('proxy ok' if socket.create_connection(('127.0.0.1', proxy.port)) else '')
`
	host, port, _ := net.SplitHostPort(up)
	out, code = m.netChild(t, &fakeDecider{}, true, tool(t, "python3"), "-c", fmt.Sprintf(script, host, port))
	if code != 0 || strings.Contains(out, "connected") || !strings.Contains(out, "proxy ok") {
		t.Fatalf("no namespace: exit %d:\n%s", code, out)
	}
}

// TestWebPageNotReachable: the API bridge forwards the API, never the web
// page a person approves on.
func TestWebPageNotReachable(t *testing.T) {
	needLandlock(t)
	m := newMachine(t)
	curl := tool(t, "curl")
	script := fmt.Sprintf(`for p in /v1/requests / /login /static/app.js /v1/../login /%%2e%%2e/login; do %s -s -w ' %%{http_code}\n' "$GATEWAY_URL$p"; done`, curl)
	out, _ := m.netChild(t, &fakeDecider{}, false, tool(t, "bash"), "-c", script)
	if !strings.HasPrefix(out, "gateway saw /v1/requests 200\n") || strings.Count(out, "gateway saw") != 1 || strings.Count(out, " 404\n") != 5 {
		t.Fatalf("output:\n%s", out)
	}
}
