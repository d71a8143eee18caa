package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/sandbox"
)

// proxyWait is how long a request through the egress proxy waits for a
// person, as a hook does.
const proxyWait = 9 * time.Minute

// runInSandbox starts the program in the sandbox, serves its proxy and
// its way to the API, and returns its exit status.
func runInSandbox(e *env, cfg config.Config, p *runPlan, abi int) error {
	defer os.RemoveAll(p.tmp)
	base, err := url.Parse(p.url)
	if err != nil {
		return err
	}
	stderr := &syncWriter{w: e.stderr} // the start line and the program's stderr, one write at a time
	ch, err := sandbox.Start(sandbox.Config{
		Argv: p.argv, Env: p.env, Dir: p.dir, Rules: p.rules, ABI: abi, Network: p.network,
		ProxyVars: proxyVars, APIVars: []string{"GATEWAY_URL"},
		Stdin: e.stdin, Stdout: e.stdout, Stderr: stderr,
		Started: func(abi int, namespace bool) {
			fmt.Fprintf(stderr, "gateway run: Landlock ABI %d (%s); %d read exceptions; writes: %s; network: %s\n",
				abi, sandbox.Holds(abi), len(p.rules.Denied), writeRootsLine(p), networkLine(p.network, namespace))
		},
	})
	if err != nil {
		return fmt.Errorf("starting the sandbox: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ch.Proxy != nil {
		gw := client.New(p.url, p.token)
		px := &sandbox.Proxy{Decide: func(ctx context.Context, target, summary string) (bool, string, error) {
			return decideEgress(ctx, gw, target, summary)
		}}
		go func() { _ = px.Serve(ch.Proxy) }()
	}
	api := &http.Server{Handler: sandbox.APIBridge(base), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = api.Serve(ch.API) }()
	// Ctrl-C reaches the program from its terminal; a TERM or HUP sent to
	// gateway run is passed on. Neither ends gateway run before it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != os.Interrupt {
					_ = ch.Signal(s)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	code := ch.Wait()
	_ = api.Close()
	if code != 0 {
		return exitError{code: code}
	}
	return nil
}

// decideEgress asks the gateway about one request of the program through
// the proxy, as the agent: network:http on its host, waiting for a person
// when one is asked.
func decideEgress(ctx context.Context, gw *client.Client, target, summary string) (bool, string, error) {
	req, err := gw.Request(ctx, client.Req{Capability: "network:http", Target: target, Summary: summary,
		Executor: "gateway run egress proxy", Timeout: proxyWait}, proxyWait)
	if err != nil {
		return false, "", err
	}
	if req.Allowed() {
		return true, "", nil
	}
	reason := req.Reason
	if reason == "" {
		reason = string(req.Status)
	}
	return false, reason, nil
}

func writeRootsLine(p *runPlan) string {
	var out []string
	for _, r := range p.rules.WriteRoots {
		if p.home != "" && strings.HasPrefix(r, p.home+"/") {
			r = "~" + strings.TrimPrefix(r, p.home)
		}
		out = append(out, r)
	}
	return strings.Join(out, ", ")
}

// syncWriter serialises writes to w. exec copies a program's output with
// io.Copy, which would use w's ReadFrom, reserving space before the data
// comes; through syncWriter it writes whole chunks, each under the lock.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
