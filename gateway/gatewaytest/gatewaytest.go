// Package gatewaytest runs a whole gateway for tests: the App of a config
// over a fresh temporary database, served on a loopback port, stopped and
// closed when the test ends. It is the one set-up of "a gateway over a
// temporary database" that end-to-end tests outside package gateway share
// (the MCP server, the command line, the agent hooks, the messengers, the
// web page); Fuzz is the same for a fuzz target, called in process over
// a database it renews.
package gatewaytest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// Config is config.Default with its state in a fresh temporary directory
// of tb (the database, vaglio's log) and the agents given.
func Config(tb testing.TB, agents ...config.Agent) config.Config {
	tb.Helper()
	dir := tb.TempDir()
	cfg := config.Default()
	cfg.Storage.Path = filepath.Join(dir, "state", "gateway.db")
	cfg.Vaglio.LogDir = filepath.Join(dir, "vaglio")
	cfg.Agents = agents
	return cfg
}

// Agent is config.NewAgent with its token, an admin when admin is true.
func Agent(id, token string, admin bool) config.Agent {
	a := config.NewAgent(id)
	a.Token, a.Admin = token, admin
	return a
}

// Gateway is a gateway serving on a loopback port.
type Gateway struct {
	URL string // http://127.0.0.1:port
	App *gateway.App

	tb     testing.TB
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Serve's, once done is closed
	taken  atomic.Bool
	once   sync.Once
	closed sync.Once
}

// New builds the App of cfg with opts, not served (a test serves its
// handler as it needs); it is closed when the test ends.
func New(tb testing.TB, cfg config.Config, opts gateway.AppOptions) *gateway.App {
	tb.Helper()
	app, err := gateway.NewApp(context.Background(), cfg, opts)
	if err != nil {
		tb.Fatalf("gatewaytest: NewApp: %v", err)
	}
	tb.Cleanup(func() { app.Close() })
	return app
}

// Listen is a listener on 127.0.0.1 (a port of its own) for StartOn,
// for a test that needs the gateway's address before its options.
func Listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gatewaytest: listen: %v", err)
	}
	return ln
}

// Start builds the App of cfg with opts and serves it on 127.0.0.1 (a
// port of its own). When the test ends it is stopped, and its App
// closed.
func Start(tb testing.TB, cfg config.Config, opts gateway.AppOptions) *Gateway {
	tb.Helper()
	return StartOn(tb, Listen(tb), cfg, opts)
}

// StartOn is Start on ln.
func StartOn(tb testing.TB, ln net.Listener, cfg config.Config, opts gateway.AppOptions) *Gateway {
	tb.Helper()
	app, err := gateway.NewApp(context.Background(), cfg, opts)
	if err != nil {
		ln.Close()
		tb.Fatalf("gatewaytest: NewApp: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{URL: "http://" + ln.Addr().String(), App: app, tb: tb, addr: ln.Addr().String(),
		cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.err = app.Serve(ctx, ln)
	}()
	tb.Cleanup(g.Close)
	return g
}

// Stop shuts the server down (what a restart or SIGTERM does) and waits
// until it has; the App stays open for the test to read until the test
// ends. Serve's error, unless Served took it, fails the test. Stopping
// again does nothing.
func (g *Gateway) Stop() {
	g.once.Do(func() {
		g.cancel()
		<-g.done
		if g.err != nil && !g.taken.Load() {
			g.tb.Errorf("gatewaytest: serve: %v", g.err)
		}
	})
}

// Close stops the gateway and closes its App. Closing again does nothing.
func (g *Gateway) Close() {
	g.Stop()
	g.closed.Do(func() {
		if err := g.App.Close(); err != nil {
			g.tb.Errorf("gatewaytest: close: %v", err)
		}
	})
}

// Served waits up to timeout for Serve to return by itself (a fatal
// error, such as a refused token) and gives its error; done is false
// when it still runs.
func (g *Gateway) Served(timeout time.Duration) (done bool, err error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-g.done:
		g.taken.Store(true)
		return true, g.err
	case <-t.C:
		return false, nil
	}
}

// Restart closes g and starts the gateway of cfg (its database, as a
// rule g's) with opts on g's address: every open connection is cut, what
// the database holds stays.
func (g *Gateway) Restart(tb testing.TB, cfg config.Config, opts gateway.AppOptions) *Gateway {
	tb.Helper()
	g.Close()
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		tb.Fatalf("gatewaytest: listen again on %s: %v", g.addr, err)
	}
	return StartOn(tb, ln, cfg, opts)
}
