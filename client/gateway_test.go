package client_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
)

// The agents of the test gateway.
const (
	agentToken = "tok-agent-a1"
	adminToken = "tok-admin"
	otherToken = "tok-agent-b2"
)

// liveGateway is gatewaytest's gateway, restartable on the same database
// and port.
type liveGateway struct {
	URL  string
	tb   testing.TB
	cfg  config.Config
	opts gateway.AppOptions
	gw   *gatewaytest.Gateway
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

// startLive starts a gateway until tb ends or Stop.
func startLive(tb testing.TB, cfg config.Config, opts gateway.AppOptions) *liveGateway {
	tb.Helper()
	gw := gatewaytest.Start(tb, cfg, opts)
	return &liveGateway{URL: gw.URL, tb: tb, cfg: cfg, opts: opts, gw: gw}
}

// Stop shuts the gateway down and closes its database.
func (g *liveGateway) Stop() { g.gw.Close() }

// Restart stops the gateway and starts it again on the same database and
// port: every open connection (long-polls, event streams) is cut.
func (g *liveGateway) Restart() {
	g.tb.Helper()
	g.gw = g.gw.Restart(g.tb, g.cfg, g.opts)
}

// newLive starts a gateway in a fresh temporary directory for an Example
// (which has no testing.TB); stop stops it and removes the directory.
func newLive() (g *liveGateway, stop func()) {
	tb := newExampleTB()
	g = startLive(tb, gatewayConfig(tb.TempDir()), gateway.AppOptions{Home: "/home/test"})
	return g, tb.stop
}

// exampleTB is the testing.TB of an Example: a failure panics, which
// fails the example; the clean-ups run at stop.
type exampleTB struct {
	testing.TB // nil: only the methods below may be called
	dir        string
	cleanups   []func()
}

func newExampleTB() *exampleTB {
	dir, err := os.MkdirTemp("", "gateway-client-")
	if err != nil {
		panic(err)
	}
	return &exampleTB{dir: dir}
}

func (e *exampleTB) Helper()                        {}
func (e *exampleTB) Cleanup(f func())               { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Errorf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (e *exampleTB) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

func (e *exampleTB) TempDir() string {
	dir, err := os.MkdirTemp(e.dir, "")
	if err != nil {
		panic(err)
	}
	return dir
}

func (e *exampleTB) stop() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	os.RemoveAll(e.dir)
}
