package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
	"github.com/metnos/gateway/storage/storagetest"
)

// The Telegram side of the replica tests: the chat cards go to, and the
// one person allowed to tap.
const (
	replicaChat     = int64(-100424242)
	replicaApprover = int64(777001)
)

var replicaTapper = tgbotapi.User{ID: replicaApprover, FirstName: "Roberto"}

// botProxy stands between one replica and the fake Bot API and records
// which replica called what, so a test sees who polls getUpdates.
type botProxy struct {
	replica int
	srv     *httptest.Server
	log     *pollLog
}

// pollLog is every getUpdates call, by replica, in order.
type pollLog struct {
	mu    sync.Mutex
	polls []poll
}

type poll struct {
	replica int
	at      time.Time
}

func (l *pollLog) add(replica int) {
	l.mu.Lock()
	l.polls = append(l.polls, poll{replica, time.Now()})
	l.mu.Unlock()
}

func (l *pollLog) all() []poll {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.polls)
}

// firstAfter is the first getUpdates made after t, by any replica.
func (l *pollLog) firstAfter(t time.Time) (poll, bool) {
	for _, p := range l.all() {
		if p.at.After(t) {
			return p, true
		}
	}
	return poll{}, false
}

func newBotProxy(t *testing.T, replica int, fake *telegramtest.Server, polls *pollLog) *botProxy {
	t.Helper()
	target, _ := url.Parse(fake.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a killed replica's poll ends with "context canceled"
	p := &botProxy{replica: replica, log: polls}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/getUpdates") {
			polls.add(replica)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// replica is one `gateway serve` child process on the shared database.
type replica struct {
	n      int
	cmd    *exec.Cmd
	URL    string
	stderr *lockedBuffer
	exited chan struct{}
	client *http.Client
}

// replicaConfig writes the config of replica n: PostgreSQL from the
// environment, Telegram through its own proxy, an agent whose cards go to
// Telegram, an admin, and a bench agent that policy answers at once.
func replicaConfig(t testing.TB, dir string, n int, botAPI string) string {
	t.Helper()
	cfg := fmt.Sprintf(`[storage]
driver = "postgres"
dsn_env = "REPLICA_DSN"

[vaglio]
log_dir = %q

[approvals]
timeout = "1h"

[telegram]
token_env = "REPLICA_TG_TOKEN"
chat_id = %d
approvers = [%d]
api_endpoint = %q

[[agents]]
id = "agent"
token_env = "CHILD_AGENT_TOKEN"
sender_id = "owner"
notify = ["telegram", "web"]
rate = "1000000/s"
cards_per_minute = 0 # every card posted: the test taps them
max_pending = 100000 # the load leaves hundreds pending during the takeover

[[agents]]
id = "admin"
token_env = "CHILD_ADMIN_TOKEN"
admin = true
rate = "1000000/s"
`, filepath.Join(dir, fmt.Sprintf("vaglio-%d", n)), replicaChat, replicaApprover, botAPI+"/bot%s/%s")
	path := filepath.Join(dir, fmt.Sprintf("replica-%d.toml", n))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func startReplica(t testing.TB, bin, cfgPath, dir string, n int, env ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = append([]string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		"CHILD_AGENT_TOKEN=" + childAgentToken, "CHILD_ADMIN_TOKEN=" + childAdminToken,
		"REPLICA_TG_TOKEN=" + telegramtest.DefaultToken}, env...)
	r := &replica{n: n, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}}
	cmd.Stderr = r.stderr
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
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_ = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.exited:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-r.exited
			}
		}
		r.client.CloseIdleConnections()
	})
	select {
	case r.URL = <-urls:
	case <-r.exited:
		t.Fatalf("replica %d exited before listening\n%s", n, r.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %d not listening after 30s\n%s", n, r.stderr)
	}
	return r
}

func (r *replica) do(ctx context.Context, method, path, tok string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// want calls the replica and decodes the request it answers.
func (r *replica) want(t *testing.T, status int, method, path, tok string, body any) approvals.Request {
	t.Helper()
	code, b, err := r.do(context.Background(), method, path, tok, body)
	if err != nil || code != status {
		t.Fatalf("replica %d: %s %s = %d %s %v, want %d\n%s", r.n, method, path, code, b, err, status, r.stderr)
	}
	var out approvals.Request
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

// leads reads /readyz: whether this replica says it leads.
func (r *replica) leads() bool {
	code, b, err := r.do(context.Background(), "GET", "/readyz", "", nil)
	if err != nil || code != http.StatusOK {
		return false
	}
	var st struct{ Leader bool }
	return json.Unmarshal(b, &st) == nil && st.Leader
}

func leaderOf(rs []*replica) (n int, who *replica) {
	for _, r := range rs {
		select {
		case <-r.exited:
			continue
		default:
		}
		if r.leads() {
			n, who = n+1, r
		}
	}
	return n, who
}

func pendingBody(callID string) map[string]any {
	return map[string]any{"call_id": callID, "capability": "fs:read", "target": "/srv/replicas/" + callID + ".txt",
		"intent": "read the report file", "executor": "report_reader"}
}

// cardOf finds the Telegram card of a request (by its target) once the
// leader has posted it.
func cardOf(t *testing.T, fake *telegramtest.Server, target string, within time.Duration) telegramtest.Message {
	t.Helper()
	var card telegramtest.Message
	fake.WaitUntil(t, within, "the card of "+target, func() bool {
		for _, m := range fake.BotMessages() {
			if strings.Contains(m.Text, target) && m.ChatID == replicaChat {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

// oversubscribed reports the 1-minute load average when it is over three
// runnable tasks per core: then a latency tail measures the scheduler.
func oversubscribed() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	var load float64
	if _, err := fmt.Sscan(string(b), &load); err != nil {
		return 0, false
	}
	return load, load > 3*float64(runtime.NumCPU())
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// TestReplicas_PostgreSQL runs three `gateway serve` processes on one
// PostgreSQL database, Telegram on a fake Bot API (through a proxy per
// replica, so the test sees which replica polls):
//   - exactly one replica leads, and only it polls getUpdates;
//   - an agent long-polling on replica A is answered when the decision
//     arrives on replica B (the admin API), p99 ≤ 50 ms over 120 rounds, and
//     when the tap arrives by Telegram on the leader;
//   - kill -9 of the leader: another replica polls within 10 s, while
//     agents keep submitting to the others, and no request is lost: every
//     acknowledged one exists, every pending one gets its card and is
//     decided (by taps on cards the dead leader posted, and by the API).
func TestReplicas_PostgreSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three gateways on PostgreSQL")
	}
	dsn := storagetest.FreshSchema(t) // skips, saying why, without a server
	bin := gatewayBinary(t)
	dir := t.TempDir()
	fake := telegramtest.New(t, telegramtest.Options{})
	polls := &pollLog{}
	var rs []*replica
	for n := range 3 {
		proxy := newBotProxy(t, n, fake, polls)
		rs = append(rs, startReplica(t, bin, replicaConfig(t, dir, n, proxy.srv.URL), dir, n, "REPLICA_DSN="+dsn))
	}
	var leader *replica
	deadline := time.Now().Add(15 * time.Second)
	for {
		n, who := leaderOf(rs)
		if n == 1 {
			leader = who
			break
		}
		if n > 1 || time.Now().After(deadline) {
			t.Fatalf("%d leaders (want 1)", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var followers []*replica
	for _, r := range rs {
		if r != leader {
			followers = append(followers, r)
		}
	}
	a, b := followers[0], followers[1]
	t.Logf("leader: replica %d; agent waits on replica %d, decisions on replica %d", leader.n, a.n, b.n)
	ctx := context.Background()

	// An agent waits on A; the decision arrives on B.
	waitOn := func(r *replica, id string) <-chan time.Time {
		done := make(chan time.Time, 1)
		go func() {
			code, body, err := r.do(ctx, "GET", "/v1/requests/"+id+"?wait=20s", childAgentToken, nil)
			if err != nil || code != http.StatusOK {
				t.Errorf("long-poll %s on replica %d: %d %s %v", id, r.n, code, body, err)
			}
			done <- time.Now()
		}()
		return done
	}
	// Up to three attempts of 120 rounds: the machine running the tests is
	// shared (with the other test packages, in CI), and a single attempt's
	// p99 is its second-worst round; a gateway that wakes waiters late
	// fails all three.
	const rounds, attempts, bound = 120, 3, 50 * time.Millisecond
	var p99 time.Duration
	for attempt := 1; attempt <= attempts; attempt++ {
		var lat []time.Duration
		for i := range rounds {
			req := a.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken,
				pendingBody(fmt.Sprintf("lat-%d-%d", attempt, i)))
			done := waitOn(a, req.ID)
			time.Sleep(25 * time.Millisecond) // the long-poll is in
			t0 := time.Now()
			d := []string{"allow_once", "deny"}[i%2]
			b.want(t, http.StatusOK, "POST", "/v1/requests/"+req.ID+"/decision", childAdminToken, map[string]string{"decision": d})
			select {
			case t1 := <-done:
				lat = append(lat, t1.Sub(t0))
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: the agent on replica %d was not answered 10s after the decision on replica %d", i, a.n, b.n)
			}
		}
		p99 = percentile(lat, 0.99)
		t.Logf("attempt %d: decision on replica %d → answer on replica %d, %d rounds: p50 %s, p99 %s, max %s",
			attempt, b.n, a.n, rounds, percentile(lat, 0.5).Round(10*time.Microsecond),
			p99.Round(10*time.Microsecond), slices.Max(lat).Round(10*time.Microsecond))
		if p99 <= bound {
			break
		}
	}
	if p99 > bound {
		if load, ok := oversubscribed(); ok {
			t.Logf("p99 %s over the %s bound, but the machine is oversubscribed (load %.1f on %d cores): "+
				"scheduling, not the gateway, sets the tail; not a verdict", p99, bound, load, runtime.NumCPU())
		} else {
			t.Errorf("p99 %s from a decision on one replica to the answer on another (%d attempts), want ≤ %s",
				p99, attempts, bound)
		}
	}

	// A tap in Telegram, delivered by getUpdates to the leader; the agent
	// waits on a follower.
	var tapLat []time.Duration
	for i := range 10 {
		req := a.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken, pendingBody(fmt.Sprintf("tap-%d", i)))
		card := cardOf(t, fake, req.Target, 10*time.Second)
		done := waitOn(a, req.ID)
		time.Sleep(25 * time.Millisecond)
		t0 := time.Now()
		fake.PressButton(t, replicaTapper, replicaChat, card.ID, "Allow once")
		select {
		case t1 := <-done:
			tapLat = append(tapLat, t1.Sub(t0))
		case <-time.After(10 * time.Second):
			t.Fatalf("tap %d: the agent on replica %d was not answered 10s after the tap", i, a.n)
		}
	}
	t.Logf("Telegram tap (getUpdates on the leader) → answer on replica %d: p50 %s, max %s", a.n,
		percentile(tapLat, 0.5).Round(10*time.Microsecond), slices.Max(tapLat).Round(10*time.Microsecond))

	// Before the kill: pending requests on every replica, cards posted.
	var before []approvals.Request
	for i := range 12 {
		r := rs[i%3]
		before = append(before, r.want(t, http.StatusAccepted, "POST", "/v1/requests", childAgentToken,
			pendingBody(fmt.Sprintf("before-%d", i))))
	}
	for _, p := range before {
		cardOf(t, fake, p.Target, 10*time.Second)
	}
	for _, p := range polls.all() {
		if p.replica != leader.n {
			t.Fatalf("replica %d polled getUpdates while replica %d leads", p.replica, leader.n)
		}
	}

	// Agents keep submitting to the followers while the leader dies.
	type acked struct {
		id      string
		pending bool
	}
	var (
		ackMu  sync.Mutex
		acks   []acked
		failed atomic.Int64
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := followers[w%2]
			for i := 0; loadCtx.Err() == nil; i++ {
				pending := i%4 == 0
				body := map[string]any{"call_id": fmt.Sprintf("during-%d-%d", w, i), "capability": "llm:local",
					"intent": "summarise locally", "executor": "summariser"}
				if pending {
					body = pendingBody(fmt.Sprintf("during-%d-%d", w, i))
				}
				code, b, err := r.do(loadCtx, "POST", "/v1/requests", childAgentToken, body)
				if loadCtx.Err() != nil {
					return
				}
				var got approvals.Request
				if err != nil || (code != http.StatusOK && code != http.StatusAccepted) || json.Unmarshal(b, &got) != nil {
					failed.Add(1)
					continue
				}
				ackMu.Lock()
				acks = append(acks, acked{got.ID, got.Status == approvals.StatusPending})
				ackMu.Unlock()
				if pending {
					time.Sleep(50 * time.Millisecond) // a card each, not a flood
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.exited
	next, ok := polls.firstAfter(killed)
	for !ok && time.Since(killed) < 15*time.Second {
		time.Sleep(10 * time.Millisecond)
		next, ok = polls.firstAfter(killed)
	}
	if !ok {
		t.Fatalf("no replica polled getUpdates within 15s of the leader's death")
	}
	takeover := next.at.Sub(killed)
	t.Logf("leader replica %d killed; replica %d polled getUpdates %s later", leader.n, next.replica, takeover.Round(time.Millisecond))
	if next.replica == leader.n {
		t.Fatalf("the dead leader polled")
	}
	if takeover > 10*time.Second {
		t.Errorf("takeover took %s, want ≤ 10s", takeover)
	}
	time.Sleep(500 * time.Millisecond)
	stopLoad()
	wg.Wait()
	survivors := followers
	if n, who := leaderOf(survivors); n != 1 || who.n != next.replica {
		t.Fatalf("after the takeover %d leaders (%v), want replica %d alone", n, who, next.replica)
	}
	newLeader := rs[next.replica]
	other := survivors[0]
	if other == newLeader {
		other = survivors[1]
	}
	if failed.Load() > 0 {
		t.Errorf("%d submissions to the surviving replicas failed during the takeover", failed.Load())
	}
	t.Logf("%d requests acknowledged by the surviving replicas during the takeover", len(acks))

	// No request lost: every acknowledged one is there, every pending one
	// gets its card from the new leader; all are decidable.
	for _, k := range acks {
		code, body, err := other.do(ctx, "GET", "/v1/requests/"+k.id, childAgentToken, nil)
		if err != nil || (code != http.StatusOK && code != http.StatusAccepted) {
			t.Errorf("acknowledged request %s: %d %s %v", k.id, code, body, err)
		}
	}
	for i, p := range before {
		if i%2 == 0 { // a tap on the card the dead leader posted, now polled by the new one
			card := cardOf(t, fake, p.Target, time.Second)
			fake.PressButton(t, replicaTapper, replicaChat, card.ID, "Deny")
		} else {
			other.want(t, http.StatusOK, "POST", "/v1/requests/"+p.ID+"/decision", childAdminToken,
				map[string]string{"decision": "allow_once"})
		}
	}
	for i, p := range before {
		want := []approvals.Status{approvals.StatusDenied, approvals.StatusAllowed}[i%2]
		got := other.want(t, http.StatusOK, "GET", "/v1/requests/"+p.ID+"?wait=10s", childAgentToken, nil)
		if got.Status != want {
			t.Errorf("%s (made before the kill): %s, want %s", p.ID, got.Status, want)
		}
	}
	var pendingDuring int
	ackMu.Lock()
	for _, k := range acks {
		if !k.pending {
			continue
		}
		pendingDuring++
		r := other.want(t, http.StatusAccepted, "GET", "/v1/requests/"+k.id, childAgentToken, nil)
		cardOf(t, fake, r.Target, 15*time.Second)
		other.want(t, http.StatusOK, "POST", "/v1/requests/"+k.id+"/decision", childAdminToken,
			map[string]string{"decision": "deny"})
	}
	ackMu.Unlock()
	t.Logf("%d pending requests made during the takeover all got their cards and were decided", pendingDuring)
	// Only the new leader polls from the takeover on.
	for _, p := range polls.all() {
		if p.at.After(next.at) && p.replica != newLeader.n {
			t.Errorf("replica %d polled getUpdates after replica %d took over", p.replica, newLeader.n)
		}
	}

	// Run-time rules and child tokens across processes: a rule added on
	// one replica decides the very next request on another; a child token
	// revoked on one is refused by another on its next call.
	if code, body, err := newLeader.do(ctx, "POST", "/v1/policy/rules", childAdminToken,
		map[string]any{"capability": "llm:online", "target": "*", "action": "block"}); err != nil || code != http.StatusCreated {
		t.Fatalf("add a rule on replica %d: %d %s %v", newLeader.n, code, body, err)
	}
	if r := other.want(t, http.StatusOK, "POST", "/v1/requests", childAgentToken,
		map[string]any{"capability": "llm:online"}); r.Status != approvals.StatusDenied {
		t.Errorf("replica %d after the rule added on replica %d: %s (%s)", other.n, newLeader.n, r.Status, r.Reason)
	}
	code, body, err := other.do(ctx, "POST", "/v1/tokens", childAgentToken, map[string]any{"ttl": "1h", "name": "sub"})
	var child struct{ ID, Token string }
	if err != nil || code != http.StatusCreated || json.Unmarshal(body, &child) != nil {
		t.Fatalf("make a child token on replica %d: %d %s %v", other.n, code, body, err)
	}
	if code, _, _ := newLeader.do(ctx, "GET", "/v1/capabilities", child.Token, nil); code != http.StatusOK {
		t.Fatalf("the child token on replica %d: %d", newLeader.n, code)
	}
	if code, body, err := newLeader.do(ctx, "DELETE", "/v1/tokens/"+child.ID, childAgentToken, nil); err != nil || code != http.StatusOK {
		t.Fatalf("revoke on replica %d: %d %s %v", newLeader.n, code, body, err)
	}
	if code, _, _ := other.do(ctx, "GET", "/v1/capabilities", child.Token, nil); code != http.StatusUnauthorized {
		t.Errorf("replica %d after the revoke on replica %d: %d, want 401", other.n, newLeader.n, code)
	}
}

// benchConfig writes the config of a benchmark gateway: no messengers, one
// agent whose requests policy answers at once (llm:local), on SQLite (a
// file in dir) or on PostgreSQL (REPLICA_DSN).
func benchConfig(tb testing.TB, dir string, n int, driver string) string {
	tb.Helper()
	store := fmt.Sprintf("driver = \"sqlite\"\npath = %q", filepath.Join(dir, "bench.db"))
	if driver == "postgres" {
		store = "driver = \"postgres\"\ndsn_env = \"REPLICA_DSN\""
	}
	cfg := fmt.Sprintf(`[storage]
%s

[vaglio]
log_dir = %q

[[agents]]
id = "bench"
token_env = "CHILD_AGENT_TOKEN"
rate = "1000000/s"
`, store, filepath.Join(dir, fmt.Sprintf("vaglio-%s-%d", driver, n)))
	path := filepath.Join(dir, fmt.Sprintf("bench-%s-%d.toml", driver, n))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// replicaBenchClients is the number of concurrent keep-alive clients, as
// in the single-gateway benchmarks of package gateway.
const replicaBenchClients = 64

// decidedNowLoad sends n decided-now POST /v1/requests from
// replicaBenchClients clients, client c to replica c mod len(rs), and
// returns the rate and the p99 latency.
func decidedNowLoad(tb testing.TB, rs []*replica, n int, run string) (float64, time.Duration) {
	tb.Helper()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, replicaBenchClients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range replicaBenchClients {
		wg.Go(func() {
			r := rs[c%len(rs)]
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				body := fmt.Appendf(nil, `{"call_id":"%s-%d","capability":"llm:local","intent":"summarise locally",`+
					`"executor":"summariser","args":{"text":"x"}}`, run, i)
				req, _ := http.NewRequest(http.MethodPost, r.URL+"/v1/requests", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+childAgentToken)
				t0 := time.Now()
				resp, err := r.client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lats[c] = append(lats[c], time.Since(t0))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if e := firstErr.Load(); e != nil {
		tb.Fatalf("%d of %d requests failed; first: %v", failed.Load(), n, e)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return float64(n) / elapsed.Seconds(), percentile(all, 0.99)
}

// BenchmarkReplicas_DecidedNow measures decided-now POST /v1/requests
// (policy answers at once; each one a committed write with its audit row)
// from 64 keep-alive clients, in the same run: three `gateway serve`
// replicas on one PostgreSQL database, the clients spread over them,
// against one gateway on SQLite. It reports both rates, their p99s and the
// ratio. The workload is fixed (GATEWAY_BENCH_REQUESTS, default 20000 per
// setup, after a warm-up), so one iteration is the measurement:
//
//	go test -run '^$' -bench Replicas -benchtime 1x ./cmd/gateway/
func BenchmarkReplicas_DecidedNow(b *testing.B) {
	n := 20000
	if v, err := fmt.Sscan(os.Getenv("GATEWAY_BENCH_REQUESTS"), &n); v != 1 || err != nil {
		n = 20000
	}
	dsn := storagetest.FreshSchema(b) // skips, saying why, without a server
	bin := gatewayBinary(b)
	dir := b.TempDir()
	var pg []*replica
	for i := range 3 {
		pg = append(pg, startReplica(b, bin, benchConfig(b, dir, i, "postgres"), dir, i, "REPLICA_DSN="+dsn))
	}
	lite := []*replica{startReplica(b, bin, benchConfig(b, dir, 0, "sqlite"), dir, 3)}
	pgPIDs := []int{pg[0].cmd.Process.Pid, pg[1].cmd.Process.Pid, pg[2].cmd.Process.Pid}
	litePIDs := []int{lite[0].cmd.Process.Pid}
	for b.Loop() {
		decidedNowLoad(b, pg, 2000, "warm-pg")
		decidedNowLoad(b, lite, 2000, "warm-lite")
		cpu0 := cpuOf(litePIDs)
		liteRPS, liteP99 := decidedNowLoad(b, lite, n, "lite")
		liteCPU := (cpuOf(litePIDs) - cpu0) / time.Duration(n)
		cpu0, pgServer0 := cpuOf(pgPIDs), postgresCPU()
		pgRPS, pgP99 := decidedNowLoad(b, pg, n, "pg")
		pgGateways := (cpuOf(pgPIDs) - cpu0) / time.Duration(n)
		pgServer := (postgresCPU() - pgServer0) / time.Duration(n)
		pgCPU := pgGateways + pgServer
		b.ReportMetric(pgRPS, "pg3_req/s")
		b.ReportMetric(float64(pgP99)/1e6, "pg3_p99_ms")
		b.ReportMetric(float64(pgCPU)/1e3, "pg3_cpu_us/req")
		b.ReportMetric(float64(pgGateways)/1e3, "pg3_gateways_cpu_us/req")
		b.ReportMetric(float64(pgServer)/1e3, "pg_server_cpu_us/req")
		b.ReportMetric(liteRPS, "sqlite1_req/s")
		b.ReportMetric(float64(liteP99)/1e6, "sqlite1_p99_ms")
		b.ReportMetric(float64(liteCPU)/1e3, "sqlite1_cpu_us/req")
		b.ReportMetric(pgRPS/liteRPS, "pg3/sqlite1")
		b.ReportMetric(float64(liteCPU)/float64(pgCPU), "pg3/sqlite1_by_cpu")
		b.Logf("%d decided-now requests from %d clients: 3 replicas on PostgreSQL %.0f req/s (p99 %s; CPU/req %s "+
			"in the gateways + %s in the server), 1 gateway on SQLite %.0f req/s (p99 %s; CPU/req %s); "+
			"ratio %.2f (%.2f by CPU)",
			n, replicaBenchClients, pgRPS, pgP99.Round(10*time.Microsecond), pgGateways.Round(time.Microsecond),
			pgServer.Round(time.Microsecond), liteRPS, liteP99.Round(10*time.Microsecond), liteCPU.Round(time.Microsecond),
			pgRPS/liteRPS, float64(liteCPU)/float64(pgCPU))
	}
}

// cpuOf is the CPU time (user and system) the processes pids used so far:
// the machine may be shared, and CPU per request does not change with
// other load, where requests per second do.
func cpuOf(pids []int) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		total += procCPU(fmt.Sprintf("/proc/%d/stat", pid))
	}
	return total
}

// postgresCPU is the CPU time used so far by every PostgreSQL server
// process of the machine (the backends serving the replicas among them).
func postgresCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var total time.Duration
	for _, p := range stats {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte("(postgres)")) {
			total += procCPU(p)
		}
	}
	return total
}

// procCPU reads utime and stime from a /proc/PID/stat file (clock ticks
// of 10 ms, the Linux default).
func procCPU(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
