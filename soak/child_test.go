//go:build soak

package soak

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Where the fakes put cards, and who may decide there.
const (
	tgChatID        int64 = -1001234567890
	tgApproverID    int64 = 4242
	slackChannel          = "C0SOAKAPPROVALS"
	slackApprover         = "U0SOAKROBERTO"
	discordAppID          = "1300000000000000001"
	discordGuild          = "1300000000000000002"
	discordChannel        = "1300000000000000003"
	discordApprover       = "1300000000000004242"
)

// The secrets of a run. Each has a prefix that appears nowhere else, so
// the log grep finds a secret, or any piece of one that starts with it.
const (
	agentTokenPrefix = "sk-soak-agent-"
	argValuePrefix   = "secret-value-"
)

type secrets struct {
	TelegramToken string // "<id>:SOAKBOT<hex>"
	SlackBotToken string
	SlackSigning  string
	DiscordToken  string
}

func newSecrets() secrets {
	return secrets{
		TelegramToken: "7000001:SOAKBOT" + randHex(16),
		SlackBotToken: "xoxb-soakbot-" + randHex(16),
		SlackSigning:  "soaksign" + randHex(16),
		DiscordToken:  "SOAKDISCORD." + randHex(16),
	}
}

// needles are the strings that must never reach a log: every secret
// (also its tail, which survives URL escaping) and the prefixes of agent
// tokens and argument values.
func (s secrets) needles() []string {
	_, tgTail, _ := strings.Cut(s.TelegramToken, ":")
	return []string{s.TelegramToken, tgTail, s.SlackBotToken, s.SlackSigning, s.DiscordToken, agentTokenPrefix, argValuePrefix}
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// agentSpec is one [[agents]] entry of a generated config.
type agentSpec struct {
	ID, Token, Autonomy string
	Admin               bool
}

func (a agentSpec) tokenEnv() string {
	return "SOAK_AGENT_TOKEN_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(a.ID))
}

// makeAgents returns n agents with ceiling Full, plus the admin agent
// "soak-admin" at the end.
func makeAgents(n int) []agentSpec {
	out := make([]agentSpec, 0, n+1)
	for i := range n {
		out = append(out, agentSpec{ID: fmt.Sprintf("agent-%04d", i), Token: agentTokenPrefix + randHex(16), Autonomy: "Full"})
	}
	return append(out, agentSpec{ID: "soak-admin", Token: agentTokenPrefix + randHex(16), Autonomy: "Full", Admin: true})
}

// gwSpec is what a generated config says.
type gwSpec struct {
	Dir              string
	Agents           []agentSpec
	Secrets          secrets
	TelegramEndpoint string // "" = no Telegram
	SlackAPI         string // "" = no Slack
	DiscordAPI       string // "" = no Discord (gateway mode: its websocket from GET /gateway/bot)
	Timeout          string // approvals.timeout
	LogLevel         string
	// Routes is TOML appended to the config ([[approvals.routes]] tables).
	Routes string
}

func (g gwSpec) dbPath() string    { return filepath.Join(g.Dir, "state", "gateway.db") }
func (g gwSpec) vaglioDir() string { return filepath.Join(g.Dir, "vaglio") }
func (g gwSpec) logPath() string   { return filepath.Join(g.Dir, "gateway.log") }

// write writes the TOML config and returns its path and the child's
// environment (secrets only there, never in the file).
func (g gwSpec) write(t *testing.T) (string, []string) {
	t.Helper()
	var b strings.Builder
	q := strconv.Quote
	st, stEnv, err := storageTOML(g.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "%s\n[vaglio]\nlog_dir = %s\n\n", st, q(g.vaglioDir()))
	fmt.Fprintf(&b, "[approvals]\ntimeout = %s\n\n[log]\nformat = \"json\"\nlevel = %s\n\n", q(g.Timeout), q(g.LogLevel))
	env := []string{"HOME=" + g.Dir, "XDG_STATE_HOME=" + filepath.Join(g.Dir, "xdg-state"),
		"XDG_DATA_HOME=" + filepath.Join(g.Dir, "xdg-data"), "XDG_CONFIG_HOME=" + filepath.Join(g.Dir, "xdg-config"),
		"TZ=UTC", "PATH=" + os.Getenv("PATH")}
	env = append(env, stEnv...)
	notify := `["web"]`
	if g.TelegramEndpoint != "" && g.SlackAPI != "" {
		notify = `["telegram", "slack", "web"]`
		if g.DiscordAPI != "" {
			notify = `["telegram", "slack", "discord", "web"]`
		}
	}
	for i, a := range g.Agents {
		fmt.Fprintf(&b, "[[agents]]\nid = %s\ntoken_env = %s\nautonomy = %s\nchannel = \"telegram\"\n",
			q(a.ID), q(a.tokenEnv()), q(a.Autonomy))
		fmt.Fprintf(&b, "sender_id = \"owner-%04d\"\nnotify = %s\nrate = \"6000/m\"\ncards_per_minute = 0\nmax_pending = 100000\nadmin = %t\n\n", i, notify, a.Admin)
		env = append(env, a.tokenEnv()+"="+a.Token)
	}
	if g.TelegramEndpoint != "" {
		fmt.Fprintf(&b, "[telegram]\ntoken_env = \"SOAK_TELEGRAM_TOKEN\"\nchat_id = %d\napprovers = [%d]\napi_endpoint = %s\n\n",
			tgChatID, tgApproverID, q(g.TelegramEndpoint))
		env = append(env, "SOAK_TELEGRAM_TOKEN="+g.Secrets.TelegramToken)
	}
	if g.SlackAPI != "" {
		fmt.Fprintf(&b, "[slack]\nbot_token_env = \"SOAK_SLACK_BOT_TOKEN\"\nsigning_secret_env = \"SOAK_SLACK_SIGNING_SECRET\"\n")
		fmt.Fprintf(&b, "channel_id = %s\napprovers = [%s]\nadmins = [%s]\napi_url = %s\n\n",
			q(slackChannel), q(slackApprover), q(slackApprover), q(g.SlackAPI))
		env = append(env, "SOAK_SLACK_BOT_TOKEN="+g.Secrets.SlackBotToken, "SOAK_SLACK_SIGNING_SECRET="+g.Secrets.SlackSigning)
	}
	if g.DiscordAPI != "" {
		fmt.Fprintf(&b, "[discord]\ntoken_env = \"SOAK_DISCORD_TOKEN\"\napplication_id = %s\nguild_id = %s\nchannel_id = %s\n",
			q(discordAppID), q(discordGuild), q(discordChannel))
		fmt.Fprintf(&b, "approvers = [%s]\nadmins = [%s]\napi_url = %s\n\n", q(discordApprover), q(discordApprover), q(g.DiscordAPI))
		env = append(env, "SOAK_DISCORD_TOKEN="+g.Secrets.DiscordToken)
	}
	b.WriteString(g.Routes)
	path := filepath.Join(g.Dir, "gateway.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, env
}

// child is the gateway running as a child process: `gateway serve` on
// 127.0.0.1:0, its stdout and stderr appended to one log file.
type child struct {
	cmd     *exec.Cmd
	URL     string
	started time.Time
	ready   time.Duration // from exec to /readyz answering 200
	done    chan struct{}
	waitErr error
}

// startChild starts the gateway and waits until /readyz answers.
func startChild(t *testing.T, cfgPath string, env []string, logPath string) *child {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gatewayBin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0")
	cmd.Env = env
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start the gateway: %v", err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			_, _ = logf.WriteString(line + "\n")
			if _, rest, ok := strings.Cut(line, " listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				select {
				case urls <- u:
				default:
				}
			}
		}
		c.waitErr = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	select {
	case c.URL = <-urls:
	case <-c.done:
		t.Fatalf("the gateway exited at start: %v (log %s)", c.waitErr, logPath)
	case <-time.After(30 * time.Second):
		c.kill()
		t.Fatalf("the gateway printed no address within 30 s (log %s)", logPath)
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(c.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			c.kill()
			t.Fatalf("the gateway was not ready within 30 s: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.ready = time.Since(c.started)
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// kill is kill -9.
func (c *child) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// stop is a graceful stop (SIGTERM); it returns how long it took and the
// exit error.
func (c *child) stop(d time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return time.Since(start), c.waitErr
	case <-time.After(d):
		c.kill()
		return time.Since(start), fmt.Errorf("no exit within %s of SIGTERM; killed", d)
	}
}

// sample is one reading of the child's resources.
type sample struct {
	At     time.Duration
	RSSKiB int
	// AnonKiB and FileKiB split RSSKiB: the process's own memory (heap,
	// stacks, SQLite's caches), and the pages of files it maps (the
	// executable, shared with the page cache: how much of it counts
	// depends on how the kernel cached the file, not on the gateway).
	AnonKiB, FileKiB int
	Goroutines       int
}

// sampler reads VmRSS from /proc/<pid>/status and go_goroutines from
// /metrics every interval until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []sample
	stopCh  chan struct{}
	done    chan struct{}
}

func startSampler(pid int, base string, every time.Duration) *sampler {
	s := &sampler{stopCh: make(chan struct{}), done: make(chan struct{})}
	hc := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	take := func() {
		smp := sample{At: time.Since(start), Goroutines: goroutines(hc, base)}
		smp.RSSKiB, smp.AnonKiB, smp.FileKiB = memKiB(pid)
		s.mu.Lock()
		s.samples = append(s.samples, smp)
		s.mu.Unlock()
	}
	go func() {
		defer close(s.done)
		defer hc.CloseIdleConnections()
		t := time.NewTicker(every)
		defer t.Stop()
		take()
		for {
			select {
			case <-s.stopCh:
				take()
				return
			case <-t.C:
				take()
			}
		}
	}()
	return s
}

func (s *sampler) stop() []sample {
	close(s.stopCh)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

func rssKiB(pid int) int {
	rss, _, _ := memKiB(pid)
	return rss
}

// memKiB reads VmRSS, RssAnon and RssFile (0 when unreadable).
func memKiB(pid int) (rss, anon, file int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		switch name {
		case "VmRSS":
			rss = n
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	return rss, anon, file
}

func goroutines(hc *http.Client, base string) int {
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// reqView is the part of a request object the suite reads.
type reqView struct {
	ID         string    `json:"id"`
	CallID     string    `json:"call_id"`
	Status     string    `json:"status"`
	Decision   *string   `json:"decision"`
	Outcome    string    `json:"outcome"`
	BlockedBy  *string   `json:"blocked_by"`
	Capability string    `json:"capability"`
	DecidedBy  string    `json:"decided_by"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	Quorum     int       `json:"quorum"`
	Approvals  []struct {
		Approver string `json:"approver"`
		Decision string `json:"decision"`
	} `json:"approvals"`
}

func (r reqView) decision() string {
	if r.Decision == nil {
		return ""
	}
	return *r.Decision
}

// api calls the gateway's HTTP API.
type api struct {
	base string
	hc   *http.Client
}

func newAPI(base string, timeout time.Duration) *api {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 512, 512
	return &api{base: base, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

func (a *api) close() { a.hc.CloseIdleConnections() }

// call sends body as JSON and decodes a request object from a 200, 202 or
// 409 answer. err is a transport error (the server gone, a timeout).
func (a *api) call(ctx context.Context, method, path, token string, body any) (int, reqView, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, reqView{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, reqView{}, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, reqView{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, reqView{}, err
	}
	var v reqView
	switch resp.StatusCode {
	case http.StatusOK, http.StatusAccepted:
		err = json.Unmarshal(raw, &v)
	case http.StatusConflict:
		var e struct {
			Request reqView `json:"request"`
		}
		err = json.Unmarshal(raw, &e)
		v = e.Request
	default:
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(raw))
		return resp.StatusCode, v, &httpError{resp.StatusCode, err}
	}
	return resp.StatusCode, v, err
}

// httpError is an answer the suite did not expect; unlike a transport
// error it proves the server was up.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }

func isHTTPError(err error) bool {
	var he *httpError
	return errors.As(err, &he)
}
