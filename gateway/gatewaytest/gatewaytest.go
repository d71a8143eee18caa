// Package gatewaytest runs a whole gateway for tests: the App of a config
// over a fresh temporary database, served on a loopback port, stopped and
// closed when the test ends. It is the one set-up of "a gateway over a
// temporary database" that end-to-end tests outside package gateway share
// (the MCP server, the command line, the agent hooks).
package gatewaytest

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"

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

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
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

// Start builds the App of cfg with opts (New) and serves it on 127.0.0.1
// (a port of its own). When the test ends it is stopped, and its App
// closed.
func Start(tb testing.TB, cfg config.Config, opts gateway.AppOptions) *Gateway {
	tb.Helper()
	app := New(tb, cfg, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gatewaytest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{URL: "http://" + ln.Addr().String(), App: app, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		if err := app.Serve(ctx, ln); err != nil {
			tb.Errorf("gatewaytest: serve: %v", err)
		}
	}()
	tb.Cleanup(g.Stop) // before New's Close: cleanups run last first
	return g
}

// Stop shuts the server down (what a restart or SIGTERM does) and waits
// until it has; the App stays open for the test to read until the test
// ends. Stopping again does nothing.
func (g *Gateway) Stop() {
	g.once.Do(func() {
		g.cancel()
		<-g.done
	})
}
