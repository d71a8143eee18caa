package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/internal/testclock"
)

// The agents of the test gateway.
const (
	liveAgentToken = "tok-cli-agent"
	liveAdminToken = "tok-cli-admin"
)

// liveGateway is a whole gateway on 127.0.0.1:0 for the ask and hook tests.
type liveGateway struct {
	URL   string
	App   *gateway.App
	Admin *client.Client
	clock *testclock.Clock
}

func startLive(t *testing.T, mutate func(*config.Config)) *liveGateway {
	t.Helper()
	cfg := gatewaytest.Config(t, gatewaytest.Agent("a1", liveAgentToken, false), gatewaytest.Agent("admin", liveAdminToken, true))
	if mutate != nil {
		mutate(&cfg)
	}
	clock := testclock.New(time.Now()) // expiry without sleeping
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Now: clock.Now, Home: "/home/test"})
	return &liveGateway{URL: g.URL, App: g.App, Admin: client.New(g.URL, liveAdminToken), clock: clock}
}

// adminEvents follows every agent's events until the test ends.
func (g *liveGateway) adminEvents(t *testing.T) <-chan client.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := g.Admin.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// nextRequired waits for the next approval_required event.
func nextRequired(t *testing.T, ch <-chan client.Event) client.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e := <-ch:
			if e.Kind == client.EventRequired {
				return e
			}
		case <-deadline:
			t.Fatal("no approval_required event within 10s")
		}
	}
}

// agentEnv is the environment of an agent process pointed at g.
func agentEnv(t *testing.T, url string, extra ...string) func(string) string {
	vars := map[string]string{"HOME": t.TempDir(), "GATEWAY_URL": url, "GATEWAY_TOKEN": liveAgentToken}
	for i := 0; i+1 < len(extra); i += 2 {
		vars[extra[i]] = extra[i+1]
	}
	return func(k string) string { return vars[k] }
}

type cliResult struct {
	code           int
	stdout, stderr string
}

// testHookMargin is the hook's margin past its wait in the tests: long
// enough that a gateway answering by its wait, however slowly a busy
// machine runs it, always answers first.
const testHookMargin = 2 * time.Minute

func runCLI(ctx context.Context, getenv func(string) string, stdin string, args ...string) cliResult {
	return runCLIMargin(ctx, testHookMargin, getenv, stdin, args...)
}

// runCLIMargin is runCLI with the hook's margin past its wait.
func runCLIMargin(ctx context.Context, margin time.Duration, getenv func(string) string, stdin string, args ...string) cliResult {
	var out, errb bytes.Buffer
	e := &env{ctx: ctx, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: getenv, hookMargin: margin}
	code := e.run(args)
	return cliResult{code, out.String(), errb.String()}
}

// runAsync runs the command in the background.
func runAsync(getenv func(string) string, stdin string, args ...string) <-chan cliResult {
	ch := make(chan cliResult, 1)
	go func() { ch <- runCLI(context.Background(), getenv, stdin, args...) }()
	return ch
}

func result(t *testing.T, ch <-chan cliResult) cliResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not finish within 20s")
	}
	return cliResult{}
}

// closedURL is a URL nothing listens on.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sqliteCLI runs the command line on a config of its own whose database
// is a new SQLite file, appending --config to every call.
func sqliteCLI(t *testing.T) func(args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gw.toml")
	if err := os.WriteFile(cfgPath, []byte("[storage]\npath = "+tomlString(filepath.Join(dir, "gw.db"))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(args ...string) (int, string, string) {
		r := runCLI(context.Background(), func(k string) string { return map[string]string{"HOME": dir}[k] }, "",
			append(args, "--config", cfgPath)...)
		return r.code, r.stdout, r.stderr
	}
}
