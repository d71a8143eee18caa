package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/storage"
)

// The tokens of the child gateway's agents, passed through the environment
// as the config's token_env names them.
const (
	childAgentToken = "tok-child-agent-5a4b3c2d1e"
	childAdminToken = "tok-child-admin-9f8e7d6c5b"
)

// gatewayBinary builds cmd/gateway into the test's temporary directory
// (the go command caches the compile; only the link is redone).
func gatewayBinary(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the gateway binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// childConfig writes the TOML config of a child gateway in dir.
func childConfig(t *testing.T, dir string) string {
	t.Helper()
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"

[storage]
path = %q

[vaglio]
log_dir = %q

[approvals]
timeout = "1h"

[[agents]]
id = "agent"
token_env = "CHILD_AGENT_TOKEN"
sender_id = "owner"
rate = "100000/m"

[[agents]]
id = "admin"
token_env = "CHILD_ADMIN_TOKEN"
admin = true
`, filepath.Join(dir, "gateway.db"), filepath.Join(dir, "vaglio"))
	path := filepath.Join(dir, "gateway.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lockedBuffer collects a child's stderr for the failure message.
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

// childGateway is `gateway serve` running as a child process.
type childGateway struct {
	cmd *exec.Cmd
	URL string
	// LoginLink is the one-time login link serve printed ("" if none),
	// known once URL is.
	LoginLink string
	stderr    *lockedBuffer
	exited    chan struct{} // closed once the process has exited
	err       error         // cmd.Wait's, once exited is closed
}

var (
	listeningRE = regexp.MustCompile(`listening on (http://\S+)`)
	loginLinkRE = regexp.MustCompile(`^(http://localhost:[0-9]+/login/\S+)$`)
	webPageRE   = regexp.MustCompile(`^Web page: `)
)

func startChild(t *testing.T, bin, cfgPath, dir string) *childGateway {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"CHILD_AGENT_TOKEN=" + childAgentToken, "CHILD_ADMIN_TOKEN=" + childAdminToken}
	c := &childGateway{cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		url, link := "", ""
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				url = m[1]
			}
			if webPageRE.MatchString(sc.Text()) {
				// Then one line about logging in, and the link when serve
				// makes one.
				if sc.Scan() && strings.HasPrefix(sc.Text(), "Log in to the web page as") && sc.Scan() {
					if m := loginLinkRE.FindStringSubmatch(sc.Text()); m != nil {
						link = m[1]
					}
				}
				c.LoginLink = link
				urls <- url
			}
		}
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	select {
	case c.URL = <-urls:
	case <-c.exited:
		t.Fatalf("gateway exited before listening: %v\n%s", c.err, c.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway not listening after 20s\n%s", c.stderr)
	}
	return c
}

// stop sends sig and waits for the child to exit.
func (c *childGateway) stop(t *testing.T, sig os.Signal) (exitCode int, took time.Duration) {
	t.Helper()
	start := time.Now()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("gateway still running 20s after %v\n%s", sig, c.stderr)
	}
	return c.cmd.ProcessState.ExitCode(), time.Since(start)
}

type childAnswer struct {
	status int
	body   []byte
}

func (c *childGateway) call(t *testing.T, method, path, tok string, body any) childAnswer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return childAnswer{resp.StatusCode, b}
}

func (c *childGateway) want(t *testing.T, status int, method, path, tok string, body any) approvals.Request {
	t.Helper()
	a := c.call(t, method, path, tok, body)
	if a.status != status {
		t.Fatalf("%s %s = %d %s, want %d\n%s", method, path, a.status, a.body, status, c.stderr)
	}
	var r approvals.Request
	if err := json.Unmarshal(a.body, &r); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
	return r
}

func childPending(callID string, timeoutS int) map[string]any {
	return map[string]any{"call_id": callID, "capability": "fs:read", "target": "/srv/data/" + callID + ".txt",
		"intent": "read the report file", "executor": "report_reader", "timeout_s": timeoutS}
}

// TestServe_RestartAfterSIGKILL runs the real binary as a child: pending
// requests, a request whose timeout will pass while it is down, a grant,
// and a burst of writes cut by SIGKILL. A new process on the same file
// expires the overdue request at start-up, keeps every pending request
// decidable and every acknowledged write; SIGTERM then stops it cleanly,
// and the audit trail has one outcome row per request, nothing doubled.
func TestServe_RestartAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and waits out a 10 s timeout")
	}
	t.Parallel()
	bin := gatewayBinary(t)
	dir := t.TempDir()
	cfgPath := childConfig(t, dir)

	c1 := startChild(t, bin, cfgPath, dir)
	expiring := c1.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, childPending("expiring", 10))
	var pending []approvals.Request
	for i := range 5 {
		pending = append(pending, c1.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken,
			childPending(fmt.Sprintf("keep-%d", i), 3600)))
	}
	always := c1.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, childPending("always", 3600))
	c1.want(t, http.StatusOK, "POST", "/v1/requests/"+always.ID+"/decision", childAdminToken, map[string]string{"decision": "allow_always"})

	// A burst of writes, cut by SIGKILL once some are acknowledged.
	var mu sync.Mutex
	var acked []string
	const before = 8 // writes acknowledged before the kill, at least
	enough := make(chan struct{})
	ctx, stopBurst := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				b, _ := json.Marshal(map[string]any{"call_id": fmt.Sprintf("burst-%d-%d", w, i), "capability": "llm:local",
					"intent": "summarise locally", "executor": "summariser"})
				req, _ := http.NewRequestWithContext(ctx, "POST", c1.URL+"/v1/requests", bytes.NewReader(b))
				req.Header.Set("Authorization", "Bearer "+childAgentToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the process is gone
				}
				var r approvals.Request
				if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&r) == nil {
					mu.Lock()
					if acked = append(acked, r.ID); len(acked) == before {
						close(enough)
					}
					mu.Unlock()
				}
				resp.Body.Close()
			}
		})
	}
	select {
	case <-enough:
	case <-time.After(time.Minute): // a bound, never a wait
		t.Fatalf("fewer than %d writes acknowledged within a minute", before)
	}
	if code, _ := c1.stop(t, syscall.SIGKILL); code != -1 {
		t.Errorf("exit code after SIGKILL %d, want -1 (killed)", code)
	}
	stopBurst()
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}
	t.Logf("%d writes acknowledged before SIGKILL", len(acked))

	// Stay down until the short request's timeout has passed.
	time.Sleep(time.Until(expiring.ExpiresAt) + 200*time.Millisecond)
	c2 := startChild(t, bin, cfgPath, dir)
	if r := c2.want(t, http.StatusOK, "GET", "/v1/requests/"+expiring.ID, childAgentToken, nil); r.Status != approvals.StatusExpired {
		t.Errorf("the request that timed out while down is %s, want expired", r.Status)
	}
	for _, p := range pending {
		if r := c2.want(t, http.StatusAccepted, "GET", "/v1/requests/"+p.ID, childAgentToken, nil); r.Status != approvals.StatusPending {
			t.Errorf("%s after SIGKILL: %s", p.ID, r.Status)
		}
	}
	for _, id := range acked {
		if a := c2.call(t, "GET", "/v1/requests/"+id, childAgentToken, nil); a.status != http.StatusOK {
			t.Errorf("acknowledged write %s lost: %d %s", id, a.status, a.body)
		}
	}
	// Every pending request is decidable; the last one stays pending.
	for i, p := range pending[:4] {
		d := []string{"allow_once", "deny"}[i%2]
		c2.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", childAdminToken, map[string]string{"decision": d})
	}
	// The grant of before the kill still decides; the same call_id is the same request.
	again := childPending("always-2", 3600)
	again["target"] = always.Target
	if r := c2.want(t, http.StatusOK, "POST", "/v1/requests", childAgentToken, again); r.GrantID == nil {
		t.Errorf("grant lost: %s %s", r.Status, r.Reason)
	}
	if r := c2.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, childPending("keep-4", 3600)); r.ID != pending[4].ID {
		t.Errorf("call_id keep-4 gave %s, want %s", r.ID, pending[4].ID)
	}
	if code, took := c2.stop(t, syscall.SIGTERM); code != 0 || took > 10*time.Second {
		t.Errorf("SIGTERM: exit %d after %s, want 0 within 10s\n%s", code, took, c2.stderr)
	}

	// The file, with the server down.
	db, err := storage.Open(context.Background(), filepath.Join(dir, "gateway.db"))
	if err != nil {
		t.Fatal(err)
	}
	var integrity string
	if err := db.QueryRowContext(context.Background(), `PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Errorf("integrity_check: %q, %v", integrity, err)
	}
	rows, err := storage.ListAudit(context.Background(), db, "", 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	audit := map[string]map[string]int{}
	for _, r := range rows {
		if r.RequestID != "" {
			if audit[r.RequestID] == nil {
				audit[r.RequestID] = map[string]int{}
			}
			audit[r.RequestID][r.Event]++
		}
	}
	var requests int
	if err := db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM requests`).Scan(&requests); err != nil {
		t.Fatal(err)
	}
	if len(audit) != requests {
		t.Errorf("%d requests, %d with audit rows", requests, len(audit))
	}
	for id, ev := range audit {
		if ev[storage.AuditOutcome] != 1 || ev[storage.AuditDecision]+ev[storage.AuditExpired]+ev[storage.AuditCancelled] > 1 {
			t.Errorf("request %s audit %v: want one outcome and at most one end", id, ev)
		}
	}
	if ev := audit[expiring.ID]; ev[storage.AuditExpired] != 1 {
		t.Errorf("expiring: audit %v", ev)
	}
	db.Close()

	// A third start: the last pending request is still there, nothing else moved.
	c3 := startChild(t, bin, cfgPath, dir)
	if r := c3.want(t, http.StatusAccepted, "GET", "/v1/requests/"+pending[4].ID, childAgentToken, nil); r.Status != approvals.StatusPending {
		t.Errorf("after a clean restart: %s", r.Status)
	}
	c3.want(t, http.StatusOK, "POST", "/v1/requests/"+pending[4].ID+"/decision", childAdminToken, map[string]string{"decision": "deny"})
	if code, _ := c3.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("SIGINT: exit %d\n%s", code, c3.stderr)
	}
}

// TestPolicyRevoke_RunningServer: `gateway policy revoke`, run against the
// database of a gateway serving in another process, takes effect on that
// server's very next decision (SPEC §6); `policy grants` and `prune
// --dry-run` read the same file meanwhile.
func TestPolicyRevoke_RunningServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := gatewayBinary(t)
	dir := t.TempDir()
	cfgPath := childConfig(t, dir)
	c := startChild(t, bin, cfgPath, dir)
	p := c.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, childPending("cli-1", 3600))
	d := c.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", childAdminToken, map[string]string{"decision": "allow_always"})
	again := childPending("cli-2", 3600)
	again["target"] = p.Target
	if r := c.want(t, http.StatusOK, "POST", "/v1/requests", childAgentToken, again); r.GrantID == nil || *r.GrantID != *d.GrantID {
		t.Fatalf("not allowed by the grant: %s %s", r.Status, r.Reason)
	}

	getenv := func(k string) string {
		return map[string]string{"HOME": dir, "USER": "tester",
			"CHILD_AGENT_TOKEN": childAgentToken, "CHILD_ADMIN_TOKEN": childAdminToken}[k]
	}
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(args, "--config", cfgPath), nil, &out, &errb, getenv)
		return code, out.String(), errb.String()
	}
	id := fmt.Sprint(*d.GrantID)
	if code, out, errs := cli("policy", "revoke", id); code != 0 || out != "revoked\n" {
		t.Fatalf("policy revoke: %d %q %q", code, out, errs)
	}
	again["call_id"] = "cli-3"
	if r := c.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, again); r.Status != approvals.StatusPending {
		t.Errorf("after the revoke the server still says %s (%s)", r.Status, r.Reason)
	}
	if code, out, _ := cli("policy", "revoke", id); code != 0 || out != "no-op\n" {
		t.Errorf("second revoke: %d %q", code, out)
	}
	code, out, errs := cli("policy", "grants", "--all")
	var g struct {
		ID           int64   `json:"id"`
		Active       bool    `json:"active"`
		RevokeReason *string `json:"revoke_reason"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil || g.ID != *d.GrantID || g.Active || g.RevokeReason == nil {
		t.Errorf("policy grants --all: %d %q %q", code, out, errs)
	}
	if code, out, errs := cli("prune", "--dry-run"); code != 0 || !bytes.Contains([]byte(out), []byte(`"dry_run":true`)) {
		t.Errorf("prune --dry-run: %d %q %q", code, out, errs)
	}
	if code, _ := c.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("SIGTERM: exit %d\n%s", code, c.stderr)
	}
}
