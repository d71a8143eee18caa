// The egress proxy: the child's only way out. Each CONNECT or plain HTTP
// request is decided as network:http on its host before a byte leaves.

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Decide asks the gateway about one request: target is host:port as the
// gateway judges it (an address where the name resolves to one that must
// be judged as itself), summary what the child asked for.
type Decide func(ctx context.Context, target, summary string) (allowed bool, reason string, err error)

// Proxy is the egress proxy of one child.
type Proxy struct {
	Decide Decide
	// Lookup resolves names (nil: the system's resolver); the proxy
	// resolves them itself so that what is judged is what is dialled.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Local reports an address of this machine (the gateway's own among
	// them), judged as itself; nil: the machine's interface addresses.
	Local     func(netip.Addr) bool
	dialer    net.Dialer
	transport *http.Transport
}

type pinKey struct{}

// Serve serves the child's connections on ln until it is closed.
func (p *Proxy) Serve(ln net.Listener) error {
	p.dialer = net.Dialer{Timeout: 30 * time.Second}
	p.transport = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			addr, _ := ctx.Value(pinKey{}).(string)
			if addr == "" {
				return nil, errors.New("no decided address")
			}
			return p.dialer.DialContext(ctx, network, addr)
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	err := srv.Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var host, port string
	switch {
	case r.Method == http.MethodConnect:
		h, pt, err := net.SplitHostPort(r.Host)
		if err != nil {
			http.Error(w, "gateway run: CONNECT needs host:port", http.StatusBadRequest)
			return
		}
		host, port = h, pt
	case r.URL.IsAbs() && r.URL.Scheme == "http":
		host, port = r.URL.Hostname(), r.URL.Port()
		if port == "" {
			port = "80"
		}
	default:
		http.Error(w, "gateway run: this is the egress proxy; send CONNECT or an absolute http:// URL", http.StatusBadRequest)
		return
	}
	addr, ok := p.decideHost(w, r, host, port)
	if !ok {
		return
	}
	dial := net.JoinHostPort(addr.String(), port)
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, dial)
		return
	}
	p.forward(w, r, dial)
}

// decideHost decides the request and finds the address to dial. A name
// is judged first as itself; then, resolved by the proxy, it is judged
// again as its address when that is one to be judged as itself (loopback,
// link-local, private, unspecified, multicast, this machine's), and that
// address is the one dialled, so what is judged is what is reached. It
// has answered the child when ok is false.
func (p *Proxy) decideHost(w http.ResponseWriter, r *http.Request, host, port string) (addr netip.Addr, ok bool) {
	ask := func(judged, named string) bool {
		target := net.JoinHostPort(judged, port)
		summary := r.Method + " " + target
		if named != "" {
			summary += " (" + named + ")"
		}
		allowed, reason, err := p.Decide(r.Context(), target, summary)
		switch {
		case err != nil:
			http.Error(w, fmt.Sprintf("gateway run: network:http on %s could not be decided: %v", target, err), http.StatusBadGateway)
			return false
		case !allowed:
			w.Header().Set("X-Gateway-Decision", "denied")
			http.Error(w, fmt.Sprintf("gateway run: network:http on %s is denied: %s", target, reason), http.StatusForbidden)
			return false
		}
		return true
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		a = a.Unmap()
		return a, ask(a.String(), "")
	}
	if !ask(host, "") {
		return addr, false
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := lookup(r.Context(), host)
	if err == nil && len(addrs) == 0 {
		err = errors.New("no address")
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("gateway run: %s: %v", host, err), http.StatusBadGateway)
		return addr, false
	}
	for _, a := range addrs {
		if a = a.Unmap(); p.special(a) {
			return a, ask(a.String(), host)
		}
	}
	return addrs[0].Unmap(), true
}

func (p *Proxy) special(a netip.Addr) bool {
	if a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() || a.IsPrivate() {
		return true
	}
	if p.Local != nil {
		return p.Local(a)
	}
	return machineAddr(a)
}

// machineAddr reports an address of one of this machine's interfaces.
func machineAddr(a netip.Addr) bool {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return true // unknown: judge the address itself
	}
	for _, ia := range ifs {
		if n, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, dial string) {
	up, err := p.dialer.DialContext(r.Context(), "tcp", dial)
	if err != nil {
		http.Error(w, fmt.Sprintf("gateway run: %v", err), http.StatusBadGateway)
		return
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		up.Close()
		return
	}
	conn, buf, err := rc.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			conn.Close()
			return
		}
	}
	splice(conn, up)
}

// splice copies both ways until both sides are done.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

// hopHeaders are the proxy's own headers, never forwarded.
var hopHeaders = []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, dial string) {
	out := r.Clone(context.WithValue(r.Context(), pinKey{}, dial))
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("gateway run: %v", err), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}
