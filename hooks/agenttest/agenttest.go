// Package agenttest is what the tests that drive the real agent programs
// (Claude Code, Codex, Gemini CLI, Copilot CLI, Qwen Code, OpenCode, the
// MCP Inspector) share: finding the
// pinned CLIs, building the gateway binary once, running it as a server
// on loopback, and a scripted stand-in for a model API.
//
// The CLIs are installed by `make agents` (.ci/agents/install) into
// .ci/agents/node_modules/.bin, or found in $GATEWAY_AGENT_CLIS. When one
// is missing the test is skipped with a message saying so, unless
// GATEWAY_REQUIRE_AGENT_CLIS=1 (CI sets it), which makes it fail.
package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
)

// Tokens of the two agents every test gateway has.
const (
	AgentToken = "gw_agenttest_agent_0123456789"
	AdminToken = "gw_agenttest_admin_0123456789"
)

// RepoRoot is the directory holding go.mod, found upwards from the test's
// working directory (its package directory).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("agenttest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Bin is the path of the pinned agent CLI name ("codex", "gemini",
// "claude", "mcp-inspector"): $GATEWAY_AGENT_CLIS/name, else
// <repo>/.ci/agents/node_modules/.bin/name. Missing, it skips the test, or
// fails it when GATEWAY_REQUIRE_AGENT_CLIS=1.
func Bin(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("GATEWAY_AGENT_CLIS")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), ".ci", "agents", "node_modules", ".bin")
	}
	p := filepath.Join(dir, name)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p
	}
	msg := fmt.Sprintf("agent CLI %s not found in %s: `make agents` installs the pinned CLIs (or set GATEWAY_AGENT_CLIS)", name, dir)
	if os.Getenv("GATEWAY_REQUIRE_AGENT_CLIS") == "1" {
		t.Fatal(msg + " (GATEWAY_REQUIRE_AGENT_CLIS=1)")
	}
	t.Skip(msg)
	return ""
}

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// GatewayBinary builds ./cmd/gateway once per test binary and returns its
// path. Call Cleanup from TestMain to remove it afterwards.
func GatewayBinary(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "agenttest-gateway-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "gateway")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/gateway")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/gateway: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Cleanup removes what GatewayBinary built. Use it in TestMain:
//
//	func TestMain(m *testing.M) { code := m.Run(); agenttest.Cleanup(); os.Exit(code) }
func Cleanup() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// Gateway is the built gateway binary serving on 127.0.0.1 with a config
// of two agents: "agent" (AgentToken, Supervised, cards on the web page)
// and "admin" (AdminToken, may decide).
type Gateway struct {
	URL    string
	Bin    string // the gateway binary, for hook commands
	Admin  *client.Client
	Dir    string // the server's HOME and data directory
	events <-chan client.Event
	stderr *lockedBuffer
}

// StartGateway runs `gateway serve` with the base config followed by
// extra (more TOML tables: [hooks.codex], [[policy.rules]] …) until the
// test ends.
func StartGateway(t testing.TB, extra string) *Gateway {
	t.Helper()
	bin := GatewayBinary(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"

[storage]
path = %q

[vaglio]
log_dir = %q

[[agents]]
id = "agent"
token_env = "AGENTTEST_AGENT_TOKEN"

[[agents]]
id = "admin"
token_env = "AGENTTEST_ADMIN_TOKEN"
admin = true

%s
`, filepath.Join(dir, "gateway.db"), filepath.Join(dir, "vaglio"), extra)
	cfgPath := filepath.Join(dir, "gateway.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfgPath, "--log-format", "text")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"AGENTTEST_AGENT_TOKEN=" + AgentToken, "AGENTTEST_ADMIN_TOKEN=" + AdminToken}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Bin: bin, Dir: dir, stderr: &lockedBuffer{}}
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.stderr.String())
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), " listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				urls <- u
			}
		}
		close(urls)
	}()
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("gateway serve exited before listening:\n%s", g.stderr.String())
		}
		g.URL = u
	case <-time.After(60 * time.Second):
		t.Fatalf("gateway serve did not listen within 60s:\n%s", g.stderr.String())
	}
	g.Admin = client.New(g.URL, AdminToken)
	ectx, ecancel := context.WithCancel(context.Background())
	t.Cleanup(ecancel)
	g.events, err = g.Admin.Events(ectx)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Log is what the server wrote on stderr so far.
func (g *Gateway) Log() string { return g.stderr.String() }

// LogHas waits up to 5 s for the server's log to contain s: the server
// writes its info lines in batches, at most 100 ms after them (see
// cmd/gateway/logsink.go), so a line may come after the answer it logs.
func (g *Gateway) LogHas(s string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(g.Log(), s) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// NextPending waits up to d for the next request that waits for a person
// (an approval_required event).
func (g *Gateway) NextPending(t testing.TB, d time.Duration) client.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-g.events:
			if e.Kind == client.EventRequired {
				return e
			}
		case <-deadline:
			t.Fatalf("no request waited for a person within %s", d)
		}
	}
}

// DecideNext decides, in the background, the next request that waits for
// a person within d, as a person would, and then sends it on the channel
// it returns; it sends an event with an empty ID if none came or the
// decision failed. Use it while the agent under test waits.
func (g *Gateway) DecideNext(d time.Duration, decision string) <-chan client.Event {
	ch := make(chan client.Event, 1)
	go func() {
		deadline := time.After(d)
		for {
			select {
			case e := <-g.events:
				if e.Kind != client.EventRequired {
					continue
				}
				if _, err := g.Admin.Decide(context.Background(), e.ID, decision); err != nil {
					e.ID = ""
				}
				ch <- e
				return
			case <-deadline:
				ch <- client.Event{}
				return
			}
		}
	}()
	return ch
}

// MorePending drains the events already received and reports how many
// were requests waiting for a person: after an agent run, a card that
// should not have been made.
func (g *Gateway) MorePending() int {
	n := 0
	for {
		select {
		case e := <-g.events:
			if e.Kind == client.EventRequired {
				n++
			}
		default:
			return n
		}
	}
}

// Decide decides a pending request as a person would (the admin API, the
// same path as a tap).
func (g *Gateway) Decide(t testing.TB, id, decision string) {
	t.Helper()
	if _, err := g.Admin.Decide(context.Background(), id, decision); err != nil {
		t.Fatalf("decide %s %s: %v", id, decision, err)
	}
}

// Env is a minimal environment for an agent process: PATH, HOME=home,
// the gateway's URL and agent token, then kv ("K=V").
func (g *Gateway) Env(home string, kv ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"GATEWAY_URL=" + g.URL, "GATEWAY_TOKEN=" + AgentToken}
	return append(env, kv...)
}

// Run runs an agent command with env in dir, stdin closed, killing it
// after timeout, and returns its stdout and stderr.
func Run(t testing.TB, timeout time.Duration, dir string, env []string, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, nil
	cmd.WaitDelay = 5 * time.Second
	reap := Contain(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	reap()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s did not finish within %s: %w", filepath.Base(name), timeout, err)
	}
	return out.String(), errb.String(), err
}

// Model is a scripted stand-in for a model API on 127.0.0.1: it records
// every request and answers with the handler an agent-specific test gives.
type Model struct {
	URL string
	mu  sync.Mutex
	req []ModelRequest
}

// ModelRequest is one call an agent made to the model.
type ModelRequest struct {
	Method, Path string
	Body         []byte
}

// NewModel serves handle on 127.0.0.1 until the test ends. handle gets the
// request with its body already read, and n, the 0-based count of earlier
// requests to the same path.
func NewModel(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, body []byte, n int)) *Model {
	t.Helper()
	m := &Model{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.mu.Lock()
		n := 0
		for _, q := range m.req {
			if q.Path == r.URL.Path {
				n++
			}
		}
		m.req = append(m.req, ModelRequest{r.Method, r.URL.Path, body})
		m.mu.Unlock()
		handle(w, r, body, n)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

// Requests are the calls so far, in order.
func (m *Model) Requests() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ModelRequest(nil), m.req...)
}

// Saw reports whether any request body so far contains s: the test that a
// secret never reached the model.
func (m *Model) Saw(s string) bool {
	for _, q := range m.Requests() {
		if bytes.Contains(q.Body, []byte(s)) {
			return true
		}
	}
	return false
}

// SSE writes one Server-Sent Event (event may be empty) and flushes it.
func SSE(w http.ResponseWriter, event string, data []byte) {
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", data)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
