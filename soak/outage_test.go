//go:build soak

package soak

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/gateway"
	"github.com/metnos/gateway/gateway/gatewaytest"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/messenger/discord"
	"github.com/metnos/gateway/messenger/discord/discordtest"
	"github.com/metnos/gateway/messenger/slack"
	"github.com/metnos/gateway/messenger/slack/slacktest"
	"github.com/metnos/gateway/messenger/telegram"
	"github.com/metnos/gateway/messenger/telegram/telegramtest"
)

// oreq is one request of the outage scenario and what its agent saw.
type oreq struct {
	ID      string
	Phase   string
	Agent   int
	Short   bool   // a 10 s timeout: expires during the outage
	Acked   string // status acknowledged by a decision or cancel through the API
	Final   reqView
	Err     error
	Created time.Time
}

func runOutage(t *testing.T) {
	const sc = "3. messenger outage"
	loadStart := loadAvg()
	outage := envDuration("SOAK_OUTAGE", 60*time.Second)
	storm := envDuration("SOAK_STORM", 30*time.Second)
	ignore := goleak.IgnoreCurrent()
	before := runtime.NumGoroutine()

	sec := newSecrets()
	tg := telegramtest.New(t, telegramtest.Options{Token: sec.TelegramToken, CallBuffer: 1})
	sl := slacktest.New(slacktest.Options{BotToken: sec.SlackBotToken, CallBuffer: 1})
	px := newFaultProxy(sl.URL)
	dc := discordtest.New(discordtest.Options{Token: sec.DiscordToken, ApplicationID: discordAppID, GuildID: discordGuild,
		ChannelID: discordChannel, HeartbeatInterval: time.Second})
	pxd := newFaultProxy(dc.URL) // Discord's REST API; its websocket is reached directly, and dropped
	setMode := func(m faultMode) { px.set(m); pxd.set(m) }
	var closeFakes sync.Once
	closeAll := func() { closeFakes.Do(func() { px.Close(); pxd.Close(); dc.Close(); sl.Close(); tg.Close() }) }
	defer closeAll()

	dir := t.TempDir()
	agents := makeAgents(20)
	admin, workers := agents[len(agents)-1], agents[:len(agents)-1]
	spec := gwSpec{Dir: dir, Agents: agents, Secrets: sec, TelegramEndpoint: tg.Endpoint(), SlackAPI: px.URL + "/",
		DiscordAPI: pxd.URL + "/api/v10", Timeout: "10m", LogLevel: "debug"}
	cfgPath, env := spec.write(t)
	getenv := func(k string) string {
		for _, kv := range env {
			if name, v, ok := strings.Cut(kv, "="); ok && name == k {
				return v
			}
		}
		return ""
	}
	kinds := []messenger.Kind{telegram.Kind, slack.Kind, discord.Kind} // as cmd/gateway registers them
	cfg, err := config.LoadWith(cfgPath, true, getenv, config.LoadOptions{Sections: messenger.Sections(kinds)})
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(spec.logPath(), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The messengers as cmd/gateway builds them (messengers.go).
	var factories []messenger.Factory
	for _, k := range kinds {
		if f := k.Build(cfg, messenger.Options{Logger: log}); f != nil {
			factories = append(factories, f)
		}
	}
	g := gatewaytest.Start(t, cfg, gateway.AppOptions{Logger: log, Home: dir, Messengers: factories})
	app, base := g.App, g.URL
	var shutOnce sync.Once
	shutdown := func() {
		shutOnce.Do(func() {
			g.Close() // a serve error fails the test
			logf.Close()
		})
	}
	defer shutdown()

	ap := newApprover(tg, sl, sec.SlackSigning, func() string { return base })
	ap.dc = dc
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { ap.watch(watchCtx); close(watched) }()
	var stopWatchOnce sync.Once
	endWatch := func() { stopWatchOnce.Do(func() { stopWatch(); <-watched }) }
	defer endWatch()
	cl := newAPI(base, 90*time.Second)
	if _, ok := tg.Await(30*time.Second, func(c telegramtest.Call) bool { return c.Method == "setMyCommands" }); !ok {
		b, _ := os.ReadFile(spec.logPath())
		var calls []string
		for _, c := range tg.History() {
			calls = append(calls, fmt.Sprintf("%s %d %s", c.Method, c.Status, c.Description))
		}
		t.Fatalf("the gateway never reached the fake Telegram (setMyCommands, at start; calls: %v); its log:\n%s", calls, b)
	}

	var (
		mu       sync.Mutex
		reqs     []*oreq
		agentsWG sync.WaitGroup
		seq      atomic.Int64
		phaseN   = map[string]int{}
	)
	ctx := context.Background()
	create := func(phase string, short bool) {
		n := int(seq.Add(1))
		a := rand.IntN(len(workers))
		timeout := 0.0
		if short {
			timeout = 10
		}
		code, v, err := cl.call(ctx, http.MethodPost, "/v1/requests", workers[a].Token,
			humanKinds[0].body(fmt.Sprintf("outage-%04d", n), n, timeout))
		if err != nil || code != http.StatusAccepted {
			failf(t, sc, "create during %s: %d %v", phase, code, err)
			return
		}
		q := &oreq{ID: v.ID, Phase: phase, Agent: a, Short: short, Created: time.Now()}
		mu.Lock()
		reqs = append(reqs, q)
		phaseN[phase]++
		mu.Unlock()
		agentsWG.Add(1)
		go func() { // the agent waits for its answer, long-polling
			defer agentsWG.Done()
			actx, cancel := context.WithTimeout(ctx, 10*time.Minute)
			defer cancel()
			var v reqView
			var err error
			for actx.Err() == nil {
				var code int
				code, v, err = cl.call(actx, http.MethodGet, "/v1/requests/"+q.ID+"?wait=60s", workers[a].Token, nil)
				if code == http.StatusTooManyRequests {
					// Over agents[].max_streams: this agent has that many
					// other waits open (requests go to agents at random, and
					// during the outage none is answered). As the answer
					// says, it waits for one of them to end and asks again.
					select {
					case <-time.After(time.Second):
					case <-actx.Done():
					}
					continue
				}
				if err != nil || code == http.StatusOK {
					break
				}
			}
			mu.Lock()
			q.Final, q.Err = v, err
			mu.Unlock()
		}()
	}
	// act decides (admin API) or cancels (its agent) a random earlier
	// pending request, so finished cards wait to be edited too.
	var apiDecided, apiCancelled int
	act := func() {
		mu.Lock()
		var q *oreq
		for range 20 {
			if c := reqs[rand.IntN(len(reqs))]; c.Acked == "" && !c.Short {
				q = c
				break
			}
		}
		if q != nil {
			q.Acked = "busy"
		}
		mu.Unlock()
		if q == nil {
			return
		}
		var code int
		var v reqView
		var err error
		if rand.IntN(3) == 0 {
			code, v, err = cl.call(ctx, http.MethodDelete, "/v1/requests/"+q.ID, workers[q.Agent].Token, nil)
		} else {
			code, v, err = cl.call(ctx, http.MethodPost, "/v1/requests/"+q.ID+"/decision", admin.Token,
				map[string]string{"decision": "allow_once"})
		}
		if err != nil || code != http.StatusOK {
			failf(t, sc, "decide or cancel %s: %d %v", q.ID, code, err)
			return
		}
		mu.Lock()
		q.Acked = v.Status
		if v.Status == "cancelled" {
			apiCancelled++
		} else {
			apiDecided++
		}
		mu.Unlock()
	}
	// run creates requests at 5/s until d has passed, deciding one in ten
	// and giving one in twenty a 10 s timeout.
	run := func(phase string, d time.Duration) {
		end := time.Now().Add(d)
		for i := 0; time.Now().Before(end); i++ {
			create(phase, i%20 == 7)
			if i%10 == 5 {
				act()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	pendingIDs := func() []string {
		p, err := app.Service.ListPending(ctx, 100000)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]string, len(p))
		for i, r := range p {
			ids[i] = r.ID
		}
		return ids
	}
	// delivered counts pending requests without a card on each fake, and
	// finished ones whose cards still show them pending.
	delivered := func() (missTG, missSL, missDC, stale int) {
		for _, id := range pendingIDs() {
			c, _ := ap.card(id)
			if c.tgCount == 0 {
				missTG++
			}
			if c.slCount == 0 {
				missSL++
			}
			if c.dcCount == 0 {
				missDC++
			}
		}
		mu.Lock()
		all := append([]*oreq(nil), reqs...)
		mu.Unlock()
		for _, q := range all {
			r, err := app.Service.Get(ctx, q.ID)
			if err != nil || r.Status == approvals.StatusPending {
				continue
			}
			if tgDone, slDone := ap.finishedOnCards(q.ID); !tgDone || !slDone || !ap.discordDone(q.ID) {
				stale++
			}
		}
		return missTG, missSL, missDC, stale
	}
	waitDelivered := func(d time.Duration) (time.Duration, bool) {
		start := time.Now()
		for {
			a, b, e, c := delivered()
			if a+b+e+c == 0 {
				return time.Since(start), true
			}
			if time.Since(start) > d {
				failf(t, sc, "after %s: %d pending requests without a Telegram card, %d without a Slack card, %d without a Discord card, %d finished ones still shown pending",
					d, a, b, e, c)
				return time.Since(start), false
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	// Phase 0: healthy.
	for range 20 {
		create("healthy", false)
	}
	if took, ok := waitDelivered(30 * time.Second); !ok {
		t.Fatal("the cards never arrived while the fakes were healthy")
	} else {
		t.Logf("baseline: 20 cards on each fake in %s", ms(took))
	}

	// Phase 1: both fakes down: 500s, then hangs, then HTML 502s.
	t0 := time.Now()
	third := outage / 3
	for _, m := range []string{"", "getUpdates"} {
		tg.Inject(m, telegramtest.Fault{Status: http.StatusInternalServerError, Until: t0.Add(third)})
		tg.Inject(m, telegramtest.Fault{Hang: true, Until: t0.Add(2 * third)})
		tg.Inject(m, telegramtest.Fault{Status: http.StatusBadGateway, HTML: true, Until: t0.Add(outage)})
	}
	setMode(mode500)
	dc.Drop() // and Discord's websocket goes down with its REST API
	schedule := func(at time.Time, f func()) *time.Timer { return time.AfterFunc(time.Until(at), f) }
	schedule(t0.Add(third), func() { setMode(modeHang) })
	schedule(t0.Add(2*third), func() { setMode(mode500) })
	t.Logf("outage: the fakes answer 500, hang, then 502 for %s", outage)
	run("outage", outage)

	// Phase 2: 429 storms: 8 s of 429 (retry after 3 s), 2 s of calm.
	t1 := time.Now()
	px.retryAfter.Store(3)
	pxd.retryAfter.Store(3)
	stormEnd := t1.Add(storm)
	for w := t1; w.Before(stormEnd); w = w.Add(10 * time.Second) {
		on, off := w, minTime(w.Add(8*time.Second), stormEnd)
		schedule(on, func() {
			tg.Inject("", telegramtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 3, Until: off})
			setMode(mode429)
			dc.Reconnect() // op 7 in every storm: the session resumes
		})
		schedule(off, func() { setMode(modeHealthy) })
	}
	t.Logf("429 storms for %s", storm)
	run("storms", storm)
	time.Sleep(time.Until(stormEnd))
	setMode(modeHealthy)
	tg.ClearFaults()
	recovered := time.Now()

	// Phase 3: healthy again: every card arrives, finished ones are edited.
	drain, ok := waitDelivered(4 * time.Minute)
	t.Logf("after the storms: every card delivered in %s (%v)", drain.Round(time.Millisecond), ok)
	dupTG, dupSL, dupDC := ap.dupes3()

	// The person answers every pending request, alternating channels.
	pend := pendingIDs()
	tapped := 0
	var tapWG sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, id := range pend {
		c, ok := ap.card(id)
		if !ok {
			continue
		}
		chans := outageTapPlan(id)
		ds := ap.pickDecisions(&c, chans)
		tapped++
		for i, ch := range chans {
			tapWG.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; tapWG.Done() }()
				if tp := ap.tap(id, ch, ds[i]); tp.Err != nil {
					failf(t, sc, "tap: %v", tp.Err)
				}
			}()
		}
	}
	tapWG.Wait()
	agentsDone := make(chan struct{})
	go func() { agentsWG.Wait(); close(agentsDone) }()
	select {
	case <-agentsDone:
	case <-time.After(2 * time.Minute):
		failf(t, sc, "agents still waiting 2 minutes after the last tap")
	}
	if _, ok := waitDelivered(90 * time.Second); !ok {
		failf(t, sc, "cards not all edited to the outcome")
	}

	// Verify: every request final, the agent told what the database says.
	ac, err := checkAudit(ctx, spec.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range first(ac.Problems, 20) {
		failf(t, sc, "audit: %s", p)
	}
	mu.Lock()
	all := append([]*oreq(nil), reqs...)
	mu.Unlock()
	lost, wrong, expired := 0, 0, 0
	for _, q := range all {
		db, ok := ac.Requests[q.ID]
		switch {
		case !ok || q.Err != nil || q.Final.Status == "" || q.Final.Status == "pending":
			lost++
			failf(t, sc, "request %s (%s): agent got %+v %v; database has it: %t", q.ID, q.Phase, q.Final, q.Err, ok)
			continue
		case db.Status != q.Final.Status || db.Decision != q.Final.decision():
			wrong++
			failf(t, sc, "request %s: agent told %s/%s, database %s/%s", q.ID, q.Final.Status, q.Final.decision(), db.Status, db.Decision)
		case q.Acked != "" && q.Acked != "busy" && q.Acked != db.Status:
			wrong++
			failf(t, sc, "request %s: API acknowledged %s, database %s", q.ID, q.Acked, db.Status)
		}
		if db.Status == "expired" {
			expired++
			if !q.Short {
				wrong++
				failf(t, sc, "request %s with a 10 min timeout expired", q.ID)
			}
		}
	}
	if len(ac.Requests) != len(all) {
		failf(t, sc, "the database holds %d requests, the agents created %d", len(ac.Requests), len(all))
	}
	if dupTG+dupSL+dupDC != 0 {
		failf(t, sc, "duplicate cards: Telegram %d, Slack %d, Discord %d", dupTG, dupSL, dupDC)
	}

	// Faults as the fakes saw them.
	var tg5xx, tgHung, tg429 int
	var tg429At []time.Time
	for _, c := range tg.History() {
		switch {
		case c.Status >= 500:
			tg5xx++
		case c.Status == 0 && c.Description == "hung up":
			tgHung++
		case c.Status == http.StatusTooManyRequests:
			tg429++
			tg429At = append(tg429At, c.At)
		}
	}
	tgCards, slCards, dcCards := 0, 0, 0
	for _, q := range all {
		if c, ok := ap.card(q.ID); ok {
			tgCards += c.tgCount
			slCards += c.slCount
			dcCards += c.dcCount
		}
	}
	dcConnects, dcIdentifies, dcResumes := dc.Counts()

	// Stop everything and look for leaked goroutines.
	cl.close()
	ap.close()
	endWatch()
	shutdown()
	closeAll()
	leakErr := goleak.Find(ignore)
	after := runtime.NumGoroutine()
	if leakErr != nil {
		failf(t, sc, "goleak: %v", leakErr)
	}

	for name, g := range map[string]time.Duration{"Telegram": minGap(tg429At, 7*time.Second), "Slack": px.minGap429(7 * time.Second),
		"Discord": pxd.minGap429(7 * time.Second)} {
		if g >= 0 && g < 2900*time.Millisecond {
			failf(t, sc, "%s was called again %s after a 429 asking for 3 s", name, g)
		}
	}
	report.add(sc, "setup", "in-process gateway.NewApp + Serve on 127.0.0.1:0 (messengers as cmd/gateway builds them), 19 agents + admin; Telegram faults by telegramtest.Inject, Slack and Discord faults by a proxy in front of slacktest and of discordtest's REST API; Discord in gateway mode, its websocket dropped when the outage begins and sent RECONNECT (op 7) in every storm")
	report.add(sc, "outage", "%s: 500 for %s, hangs (the client times out) for %s, HTML 502/500 for %s — every Bot API method incl. getUpdates, every Slack call",
		outage, third.Round(time.Second), third.Round(time.Second), (outage - 2*third).Round(time.Second))
	report.add(sc, "429 storms", "%s: 8 s of 429 (retry_after / Retry-After 3 s), 2 s calm, repeated", storm)
	report.add(sc, "requests", "%d (healthy %d, during the outage %d, during the storms %d); %d decided and %d cancelled through the API meanwhile; %d expired (10 s timeout)",
		len(all), phaseN["healthy"], phaseN["outage"], phaseN["storms"], apiDecided, apiCancelled, expired)
	report.add(sc, "failed calls seen by the fakes", "Telegram: %d 5xx, %d hung, %d 429 · Slack: %d 500, %d hung, %d 429 · Discord: %d 500, %d hung, %d 429",
		tg5xx, tgHung, tg429, px.count(mode500), px.count(modeHang), px.count(mode429),
		pxd.count(mode500), pxd.count(modeHang), pxd.count(mode429))
	report.add(sc, "retry-after honoured", "shortest gap between two 429'd calls in a storm: Telegram %s, Slack %s, Discord %s (asked: 3 s)",
		gapString(minGap(tg429At, 7*time.Second)), gapString(px.minGap429(7*time.Second)), gapString(pxd.minGap429(7*time.Second)))
	report.add(sc, "Discord websocket", "%d connections, %d IDENTIFY, %d RESUME", dcConnects, dcIdentifies, dcResumes)
	report.add(sc, "after recovery", "every card delivered %s after the last storm ended (%s after the outage began): %d Telegram + %d Slack + %d Discord cards, %d duplicates, 0 missing; finished requests' cards edited",
		ms(drain), (recovered.Sub(t0) + drain).Round(time.Second), tgCards, slCards, dcCards, dupTG+dupSL+dupDC)
	report.add(sc, "then", "%d pending requests tapped (Telegram/Slack/Discord in turn, 1 in 10 on two): %d lost, %d in a wrong state; every agent got its answer",
		tapped, lost, wrong)
	report.add(sc, "audit trail", "%d rows, ids 1..%d, %d gaps, %d problems", ac.Rows, ac.MaxID, ac.Gaps, len(ac.Problems))
	leakText := "none"
	if leakErr != nil {
		leakText = "LEAKS (see log)"
	}
	report.add(sc, "goroutine leaks (goleak.Find after shutdown)", "%s; test process goroutines %d before, %d after", leakText, before, after)
	report.add(sc, "host load average (1/5/15 min)", "%s at the start → %s at the end", loadStart, loadAvg())
	checkNoSecrets(t, sc, sec, []string{spec.logPath()}, spec.vaglioDir(), dbDir(spec.dbPath()))
}

// outageTapPlan is where the person answers a request in the outage
// scenario: Telegram, Slack or Discord, one in ten on two of them.
func outageTapPlan(id string) []string {
	chans := []string{"telegram", "slack", "discord"}
	h := hashOf(id)
	if h%10 == 0 {
		return []string{chans[h/10%3], chans[(h/10+1)%3]}
	}
	return []string{chans[h%3]}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func gapString(d time.Duration) string {
	if d < 0 {
		return "n/a (fewer than two)"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}
