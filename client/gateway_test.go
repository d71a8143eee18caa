package client_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
)

// The agents of the test gateway.
const (
	agentToken = "tok-agent-a1"
	adminToken = "tok-admin"
	otherToken = "tok-agent-b2"
)

// liveGateway is a whole gateway serving on 127.0.0.1, restartable on the
// same database and port.
type liveGateway struct {
	URL  string
	App  *gateway.App
	addr string
	cfg  config.Config
	opts gateway.AppOptions

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// gatewayConfig is a config with three agents, files under dir.
func gatewayConfig(dir string) config.Config {
	cfg := config.Default()
	cfg.Storage.Path = filepath.Join(dir, "gateway.db")
	cfg.Vaglio.LogDir = filepath.Join(dir, "vaglio")
	a1 := config.NewAgent("a1")
	a1.Token = agentToken
	a1.Callbacks = []string{"http://127.0.0.1:*/*"} // the examples' agent servers
	b2 := config.NewAgent("b2")
	b2.Token = otherToken
	b2.Rate, b2.RateCount, b2.RatePer = "1/h", 1, time.Hour
	adm := config.NewAgent("admin")
	adm.Token, adm.Admin = adminToken, true
	cfg.Agents = []config.Agent{a1, b2, adm}
	return cfg
}

// startLive starts a gateway; it panics on failure so Examples can use it.
func startLive(cfg config.Config, opts gateway.AppOptions) *liveGateway {
	g := &liveGateway{cfg: cfg, opts: opts, addr: "127.0.0.1:0"}
	if err := g.start(); err != nil {
		panic(err)
	}
	g.URL = "http://" + g.addr
	return g
}

func (g *liveGateway) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	app, err := gateway.NewApp(ctx, g.cfg, g.opts)
	if err != nil {
		cancel()
		return err
	}
	var ln net.Listener
	for range 50 { // the old listener's port may take a moment to free
		if ln, err = net.Listen("tcp", g.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		cancel()
		app.Close()
		return err
	}
	g.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		err := app.Serve(ctx, ln)
		app.Close()
		done <- err
	}()
	g.mu.Lock()
	g.App, g.cancel, g.done = app, cancel, done
	g.mu.Unlock()
	return nil
}

// Stop shuts the gateway down and waits until it has.
func (g *liveGateway) Stop() {
	g.mu.Lock()
	cancel, done := g.cancel, g.done
	g.cancel = nil
	g.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Restart stops the gateway and starts it again on the same database and
// port: every open connection (long-polls, event streams) is cut.
func (g *liveGateway) Restart() error {
	g.Stop()
	return g.start()
}

// newLive starts a gateway in a fresh temporary directory; stop removes it.
func newLive() (g *liveGateway, stop func()) {
	dir, err := os.MkdirTemp("", "gateway-client-")
	if err != nil {
		panic(err)
	}
	g = startLive(gatewayConfig(dir), gateway.AppOptions{Home: "/home/test"})
	return g, func() { g.Stop(); os.RemoveAll(dir) }
}
