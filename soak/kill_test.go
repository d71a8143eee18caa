//go:build soak

package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// kreq is what the clients know of one request across kills.
type kreq struct {
	CallID    string
	Agent     int
	Body      map[string]any
	Now       bool   // decided on arrival
	Want      string // its status then
	ID        string // "" while its creation is in doubt
	Ambiguous bool   // the POST got no answer: the server died around it
	ExpiresAt time.Time
	Cycle     int

	Acked         string   // the final status a 200 to a decision or cancel confirmed
	AckedDecision string   // its decision
	Attempts      []string // statuses of actions whose answer never came
	Busy          bool     // an action is in flight
	Final         string   // the final status, once seen
}

// killState is every request the clients made, by call id.
type killState struct {
	mu    sync.Mutex
	reqs  map[string]*kreq
	order []string
	seq   atomic.Int64
}

func (s *killState) add(q *kreq) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs[q.CallID] = q
	s.order = append(s.order, q.CallID)
}

// pick marks a random request that the clients believe pending busy and
// returns it (nil when none is found quickly).
func (s *killState) pick(olderThan int) *kreq {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 50 {
		if len(s.order) == 0 {
			return nil
		}
		q := s.reqs[s.order[rand.IntN(len(s.order))]]
		if q.ID != "" && !q.Now && q.Final == "" && q.Acked == "" && len(q.Attempts) == 0 && !q.Busy &&
			q.Cycle < olderThan && time.Until(q.ExpiresAt) > 2*time.Second {
			q.Busy = true
			return q
		}
	}
	return nil
}

func (s *killState) all() []*kreq {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*kreq, 0, len(s.order))
	for _, c := range s.order {
		out = append(out, s.reqs[c])
	}
	return out
}

func (s *killState) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.reqs {
		if !q.Now && q.Final == "" && q.Acked == "" && (q.ID != "" || q.Ambiguous) {
			n++
		}
	}
	return n
}

// killFigures accumulates what the cycles saw.
type killFigures struct {
	killAfter, down, ready []time.Duration
	pendingAtKill          []int
	created, ambiguous     int
	committedBefore        int // ambiguous creations found by call id after the restart
	notCommitted           int
	actionsAcked           int
	actionsLost            int // actions whose answer never came
	actionsCommitted       int // … that had committed
	expiredWhileDown       int
	lost, wrong            int
	decidedAfter           map[string]int // by channel: pending requests decided after a restart
	verified               int
}

func runKillRestart(t *testing.T) {
	const sc = "2. kill -9"
	loadStart := loadAvg()
	cycles := envInt("SOAK_KILLS", 10)
	sec := newSecrets()
	tg := telegramtest.New(t, telegramtest.Options{Token: sec.TelegramToken, CallBuffer: 1})
	sl := slacktest.New(slacktest.Options{BotToken: sec.SlackBotToken, CallBuffer: 1})
	defer sl.Close()
	dir := t.TempDir()
	agents := makeAgents(50)
	admin := agents[len(agents)-1]
	workers := agents[:len(agents)-1]
	spec := gwSpec{Dir: dir, Agents: agents, Secrets: sec, TelegramEndpoint: tg.Endpoint(), SlackAPI: sl.APIURL(),
		Timeout: "10m", LogLevel: "debug"}
	cfgPath, env := spec.write(t)

	var baseURL atomic.Value
	baseURL.Store("")
	ap := newApprover(tg, sl, sec.SlackSigning, func() string { return baseURL.Load().(string) })
	defer ap.close()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { ap.watch(watchCtx); close(watched) }()
	defer func() { stopWatch(); <-watched }()

	st := &killState{reqs: map[string]*kreq{}}
	fig := &killFigures{decidedAfter: map[string]int{}}
	var gw *child
	defer func() {
		if gw != nil {
			select {
			case <-gw.done:
			default:
				gw.kill()
			}
		}
	}()
	var killAt time.Time
	for cycle := 0; ; cycle++ {
		restartAt := time.Now()
		gw = startChild(t, cfgPath, env, spec.logPath())
		fig.ready = append(fig.ready, gw.ready)
		baseURL.Store(gw.URL)
		cl := newAPI(gw.URL, 30*time.Second)
		if cycle > 0 {
			verifyAfterRestart(t, sc, cl, st, fig, spec, admin, workers, restartAt, killAt, restartAt.Add(gw.ready))
			decideAfterRestart(t, sc, cl, st, fig, ap, admin, cycle)
			t.Logf("cycle %d: restarted in %s; %d requests known, %d pending", cycle, ms(gw.ready), len(st.all()), st.pending())
		}
		if cycle == cycles {
			finishAll(t, sc, cl, st, fig, admin, ap, gw, spec)
			cl.close()
			break
		}
		ctx, stopLoad := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() { defer wg.Done(); createLoop(ctx, t, sc, cl, st, fig, workers, cycle) }()
		}
		wg.Add(2)
		go func() { defer wg.Done(); decideLoop(ctx, t, sc, cl, st, fig, admin, workers, cycle+1) }()
		go func() { defer wg.Done(); waitLoop(ctx, cl, st, workers, cycle+1) }()
		after := 2*time.Second + rand.N(8*time.Second)
		time.Sleep(after)
		fig.pendingAtKill = append(fig.pendingAtKill, st.pending())
		gw.kill()
		killAt = time.Now()
		stopLoad()
		wg.Wait()
		cl.close()
		fig.killAfter = append(fig.killAfter, after)
		down := 500*time.Millisecond + rand.N(2500*time.Millisecond)
		fig.down = append(fig.down, down)
		t.Logf("cycle %d: kill -9 after %s with %d pending; down %s", cycle, after.Round(time.Millisecond),
			fig.pendingAtKill[len(fig.pendingAtKill)-1], down.Round(time.Millisecond))
		time.Sleep(down)
	}

	ac, err := checkAudit(context.Background(), spec.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range first(ac.Problems, 20) {
		failf(t, sc, "final audit: %s", p)
	}
	if n := ac.ByStatus["pending"]; n != 0 {
		failf(t, sc, "%d requests still pending at the end", n)
	}
	if len(ac.Requests) != len(st.all()) {
		failf(t, sc, "the database holds %d requests, the clients know %d", len(ac.Requests), len(st.all()))
	}
	dupTG, dupSL := ap.dupes()
	secs := func(d []time.Duration) string {
		var p []string
		for _, x := range d {
			p = append(p, fmt.Sprintf("%.1f", x.Seconds()))
		}
		return strings.Join(p, " ")
	}
	ints := func(v []int) string {
		var p []string
		for _, x := range v {
			p = append(p, fmt.Sprint(x))
		}
		return strings.Join(p, " ")
	}
	var loadTime time.Duration
	for _, d := range fig.killAfter {
		loadTime += d
	}
	report.add(sc, "setup", "`gateway serve` child on one %s database, 49 agents + 1 admin, fake Telegram + Slack; load between kills: 4 creators (%.0f req/s: 60%% 10 min timeout, 25%% 10–25 s, 15%% decided on arrival), 1 decider/canceller (admin API, agent DELETE), 1 long-poller",
		storeName(), float64(len(st.all()))/loadTime.Seconds())
	report.add(sc, "kills", "%d × SIGKILL at random moments: after %s s of load", len(fig.killAfter), secs(fig.killAfter))
	report.add(sc, "pending at each kill", "%s", ints(fig.pendingAtKill))
	report.add(sc, "down for (s) / restart → ready", "%s / %s", secs(fig.down), durations(fig.ready))
	report.add(sc, "requests", "%d created; %d POSTs cut by the kill: %d had committed (same id on retry with the call_id), %d had not",
		len(st.all()), fig.ambiguous, fig.committedBefore, fig.notCommitted)
	report.add(sc, "decisions / cancels", "%d acknowledged; %d cut by the kill (%d of them had committed)",
		fig.actionsAcked, fig.actionsLost, fig.actionsCommitted)
	report.add(sc, "after each restart", "%d request checks: %d lost, %d in a wrong state; %d expired while the gateway was down, expired at start-up",
		fig.verified, fig.lost, fig.wrong, fig.expiredWhileDown)
	report.add(sc, "pending decided after a restart", "admin API %d · Telegram tap on the pre-crash card %d · Slack click %d · the rest at the end %d",
		fig.decidedAfter["api"], fig.decidedAfter["telegram"], fig.decidedAfter["slack"], fig.decidedAfter["final"])
	report.add(sc, "final states", "%s", statusLine(ac.ByStatus))
	report.add(sc, "audit trail", "%d rows, ids 1..%d, %d gaps, 0 duplicates; every request 1 outcome row, ≤1 decision/expired/cancelled row; %d problems",
		ac.Rows, ac.MaxID, ac.Gaps, len(ac.Problems))
	report.add(sc, "duplicate cards", "Telegram %d · Slack %d (a card sent in the instant between the post and saving its message id is posted again after the restart: at-least-once)",
		dupTG, dupSL)
	if fig.lost+fig.wrong != 0 {
		failf(t, sc, "%d lost, %d in a wrong state", fig.lost, fig.wrong)
	}
	report.add(sc, "host load average (1/5/15 min)", "%s at the start → %s at the end", loadStart, loadAvg())
	checkNoSecrets(t, sc, sec, []string{spec.logPath()}, spec.vaglioDir(), dbDir(spec.dbPath()))
}

// createLoop posts requests until ctx ends (the kill).
func createLoop(ctx context.Context, t *testing.T, sc string, cl *api, st *killState, fig *killFigures,
	workers []agentSpec, cycle int) {
	for ctx.Err() == nil {
		n := int(st.seq.Add(1))
		a := rand.IntN(len(workers))
		var k kind
		timeout := 0.0
		switch r := rand.IntN(100); {
		case r < 60:
			k = humanKinds[0]
		case r < 85:
			k, timeout = humanKinds[0], float64(10+rand.IntN(16))
		default:
			k = nowKinds[rand.IntN(len(nowKinds))]
		}
		q := &kreq{CallID: fmt.Sprintf("kill-%05d", n), Agent: a, Now: !k.Human, Want: k.Want, Cycle: cycle}
		q.Body = k.body(q.CallID, n, timeout)
		st.add(q)
		code, v, err := cl.call(ctx, http.MethodPost, "/v1/requests", workers[a].Token, q.Body)
		st.mu.Lock()
		switch {
		case err == nil && (code == http.StatusOK || code == http.StatusAccepted):
			q.ID, q.ExpiresAt = v.ID, v.ExpiresAt
			fig.created++
			if v.Status != "pending" {
				q.Final = v.Status
			}
		case isHTTPError(err):
			st.mu.Unlock()
			failf(t, sc, "create %s: %v", q.CallID, err)
			return
		default:
			q.Ambiguous = true
			fig.ambiguous++
		}
		st.mu.Unlock()
		sleep(ctx, 80*time.Millisecond+rand.N(40*time.Millisecond))
	}
}

// decideLoop decides (admin API) or cancels (the agent) random pending
// requests until ctx ends.
func decideLoop(ctx context.Context, t *testing.T, sc string, cl *api, st *killState, fig *killFigures,
	admin agentSpec, workers []agentSpec, cycles int) {
	for ctx.Err() == nil {
		sleep(ctx, 100*time.Millisecond+rand.N(100*time.Millisecond))
		q := st.pick(cycles)
		if q == nil {
			continue
		}
		want, dec := "cancelled", ""
		var code int
		var v reqView
		var err error
		if rand.IntN(5) == 0 {
			code, v, err = cl.call(ctx, http.MethodDelete, "/v1/requests/"+q.ID, workers[q.Agent].Token, nil)
		} else {
			dec = []string{"allow_once", "allow_always", "deny"}[rand.IntN(3)]
			want = decisionStatus(dec)
			code, v, err = cl.call(ctx, http.MethodPost, "/v1/requests/"+q.ID+"/decision", admin.Token,
				map[string]string{"decision": dec})
		}
		st.mu.Lock()
		q.Busy = false
		switch {
		case err == nil && code == http.StatusOK:
			q.Acked, q.AckedDecision, q.Final = v.Status, v.decision(), v.Status
			fig.actionsAcked++
			if v.Status != want || v.decision() != dec {
				st.mu.Unlock()
				failf(t, sc, "%s on %s answered %s/%s", want, q.ID, v.Status, v.decision())
				st.mu.Lock()
			}
		case err == nil && code == http.StatusConflict:
			q.Final = v.Status // finished meanwhile (expired)
		case isHTTPError(err):
			st.mu.Unlock()
			failf(t, sc, "%s on %s: %v", want, q.ID, err)
			st.mu.Lock()
		default:
			q.Attempts = append(q.Attempts, want)
			fig.actionsLost++
		}
		st.mu.Unlock()
	}
}

// waitLoop is an agent long-polling its pending requests, so kills also
// cut waits.
func waitLoop(ctx context.Context, cl *api, st *killState, workers []agentSpec, cycles int) {
	for ctx.Err() == nil {
		q := st.pick(cycles)
		if q == nil {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		_, _, _ = cl.call(ctx, http.MethodGet, "/v1/requests/"+q.ID+"?wait=2s", workers[q.Agent].Token, nil)
		st.mu.Lock()
		q.Busy = false
		st.mu.Unlock()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// verifyAfterRestart checks every request the clients know: it exists,
// and its state is one the clients' acknowledged actions and the clock
// allow. Creations cut by the kill are retried with their call_id.
func verifyAfterRestart(t *testing.T, sc string, cl *api, st *killState, fig *killFigures, spec gwSpec,
	admin agentSpec, workers []agentSpec, restartAt, killAt, readyAt time.Time) {
	ctx := context.Background()
	ac, err := checkAudit(ctx, spec.dbPath())
	if err != nil {
		t.Fatalf("read the database after the restart: %v", err)
	}
	for _, p := range first(ac.Problems, 20) {
		failf(t, sc, "audit after a restart: %s", p)
	}
	for _, q := range st.all() {
		if q.ID == "" { // its POST was cut by the kill: retry it, as an agent would
			existing := ac.ByCall[workers[q.Agent].ID+"/"+q.CallID]
			code, v, err := cl.call(ctx, http.MethodPost, "/v1/requests", workers[q.Agent].Token, q.Body)
			if err != nil || (code != http.StatusOK && code != http.StatusAccepted) {
				failf(t, sc, "retry of %s: %d %v", q.CallID, code, err)
				fig.lost++
				continue
			}
			if existing != "" {
				fig.committedBefore++
				if v.ID != existing {
					failf(t, sc, "retry of %s: a second request %s beside %s", q.CallID, v.ID, existing)
				}
			} else {
				fig.notCommitted++
			}
			st.mu.Lock()
			q.ID, q.ExpiresAt, q.Ambiguous = v.ID, v.ExpiresAt, false
			if v.Status != "pending" && q.Now {
				q.Final = v.Status
			}
			st.mu.Unlock()
		}
		code, v, err := cl.call(ctx, http.MethodGet, "/v1/requests/"+q.ID, admin.Token, nil)
		fig.verified++
		if err != nil || (code != http.StatusOK && code != http.StatusAccepted) {
			fig.lost++
			failf(t, sc, "request %s (%s) after a restart: %d %v", q.ID, q.CallID, code, err)
			continue
		}
		now := time.Now()
		st.mu.Lock()
		wrong := ""
		switch {
		case q.Final != "" && v.Status != q.Final:
			wrong = fmt.Sprintf("was %s, now %s", q.Final, v.Status)
		case q.Acked != "":
			if v.Status != q.Acked || v.decision() != q.AckedDecision {
				wrong = fmt.Sprintf("acknowledged %s/%s, now %s/%s", q.Acked, q.AckedDecision, v.Status, v.decision())
			}
		case q.Now:
			if v.Status != q.Want {
				wrong = fmt.Sprintf("policy said %s on arrival, now %s", q.Want, v.Status)
			}
		case v.Status == "pending":
			if !v.ExpiresAt.After(restartAt) {
				wrong = fmt.Sprintf("still pending after the restart though it expired at %s (restart %s)",
					v.ExpiresAt.Format(time.StampMilli), restartAt.Format(time.StampMilli))
			}
		case v.Status == "expired":
			if v.ExpiresAt.After(now) {
				wrong = "expired before its time"
			}
			if q.Final == "" && v.ExpiresAt.After(killAt) && v.ExpiresAt.Before(readyAt) {
				fig.expiredWhileDown++
			}
		case slices.Contains(q.Attempts, v.Status):
			fig.actionsCommitted++
			q.Acked, q.AckedDecision = v.Status, v.decision()
		case q.Final == "":
			wrong = fmt.Sprintf("%s by %q, which no client asked for", v.Status, v.DecidedBy)
		}
		if wrong != "" {
			fig.wrong++
			st.mu.Unlock()
			failf(t, sc, "request %s (%s): %s", q.ID, q.CallID, wrong)
			continue
		}
		if v.Status != "pending" {
			q.Final = v.Status
		}
		q.Attempts = nil
		st.mu.Unlock()
	}
	// Every request in the database (as read before the retries) is one a
	// client created.
	known := map[string]bool{}
	for _, q := range st.all() {
		known[q.ID] = true
	}
	unknown := 0
	for id := range ac.Requests {
		if !known[id] {
			unknown++
		}
	}
	if unknown > 0 {
		failf(t, sc, "%d requests in the database that no client created", unknown)
	}
}

// decideAfterRestart decides some requests that were pending before the
// kill: through the admin API, a tap on the Telegram card posted before
// the crash, and a click on the Slack one.
func decideAfterRestart(t *testing.T, sc string, cl *api, st *killState, fig *killFigures, ap *approver,
	admin agentSpec, cycle int) {
	ctx := context.Background()
	for range 20 {
		q := st.pick(cycle)
		if q == nil {
			break
		}
		dec := []string{"allow_once", "allow_always", "deny"}[rand.IntN(3)]
		code, v, err := cl.call(ctx, http.MethodPost, "/v1/requests/"+q.ID+"/decision", admin.Token,
			map[string]string{"decision": dec})
		st.mu.Lock()
		q.Busy = false
		if err != nil || code != http.StatusOK || v.Status != decisionStatus(dec) {
			st.mu.Unlock()
			failf(t, sc, "decide %s after a restart: %d %s %v", q.ID, code, v.Status, err)
			continue
		}
		q.Acked, q.AckedDecision, q.Final = v.Status, v.decision(), v.Status
		fig.decidedAfter["api"]++
		st.mu.Unlock()
	}
	for _, ch := range []string{"telegram", "telegram", "telegram", "slack", "slack"} {
		var q *kreq
		for range 20 {
			if c := st.pick(cycle); c != nil {
				card, ok := ap.card(c.ID)
				if ok && (ch == "telegram" && card.tgData[approvals.AllowOnce] != "" ||
					ch == "slack" && card.slActions[approvals.AllowOnce] != "") {
					q = c
					break
				}
				st.mu.Lock()
				c.Busy = false
				st.mu.Unlock()
			}
		}
		if q == nil {
			continue
		}
		d := []approvals.Decision{approvals.AllowOnce, approvals.Deny}[rand.IntN(2)]
		tp := ap.tap(q.ID, ch, d)
		code, v, err := cl.call(ctx, http.MethodGet, "/v1/requests/"+q.ID+"?wait=20s", admin.Token, nil)
		st.mu.Lock()
		q.Busy = false
		if tp.Err != nil || err != nil || code != http.StatusOK || v.decision() != string(d) ||
			!strings.HasPrefix(v.DecidedBy, ch+":") {
			st.mu.Unlock()
			failf(t, sc, "%s tap on %s after a restart: %v; request %d %s/%s by %q %v", ch, q.ID, tp.Err, code,
				v.Status, v.decision(), v.DecidedBy, err)
			continue
		}
		q.Acked, q.AckedDecision, q.Final = v.Status, v.decision(), v.Status
		fig.decidedAfter[ch]++
		st.mu.Unlock()
	}
}

// finishAll resolves every request still pending, waits for the cards to
// show it, and stops the gateway gracefully.
func finishAll(t *testing.T, sc string, cl *api, st *killState, fig *killFigures, admin agentSpec, ap *approver,
	gw *child, spec gwSpec) {
	ctx := context.Background()
	for _, q := range st.all() {
		if q.Final != "" || q.Now {
			continue
		}
		code, v, err := cl.call(ctx, http.MethodPost, "/v1/requests/"+q.ID+"/decision", admin.Token,
			map[string]string{"decision": "deny"})
		switch {
		case err == nil && code == http.StatusOK:
			fig.decidedAfter["final"]++
		case err == nil && code == http.StatusConflict && v.Status == "expired":
		default:
			failf(t, sc, "final decision on %s: %d %s %v", q.ID, code, v.Status, err)
		}
		st.mu.Lock()
		q.Final = v.Status
		st.mu.Unlock()
	}
	deadline := time.Now().Add(90 * time.Second)
	var stale []string
	for {
		stale = stale[:0]
		for _, q := range st.all() {
			if tgDone, slDone := ap.finishedOnCards(q.ID); !tgDone || !slDone {
				stale = append(stale, q.ID)
			}
		}
		if len(stale) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(stale) > 0 {
		failf(t, sc, "%d cards still show a finished request as pending, e.g. %v", len(stale), first(stale, 5))
	}
	if _, err := gw.stop(30 * time.Second); err != nil {
		failf(t, sc, "graceful stop: %v", err)
	}
}
