//go:build soak

package soak

import (
	"context"
	"fmt"
	"hash/fnv"
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

// kind is one sort of request in the mix.
type kind struct {
	Name       string
	Capability string
	Autonomy   string
	Target     string // %d is the request number
	Human      bool   // approval_required: a person decides
	Quorum     int    // > 1: a route asks this many approvers (see quorumRoute)
	Want       string // the status policy gives on arrival, for the others
	BlockedBy  string
}

// humanKinds need a person; nowKinds are decided on arrival. Every agent's
// ceiling is Full; the request's own autonomy picks the table column.
var (
	humanKinds = []kind{
		{Name: "fs:write@Supervised", Capability: "fs:write", Autonomy: "Supervised", Target: "/srv/soak/out/report-%05d.txt", Human: true},
		{Name: "code:exec@Supervised", Capability: "code:exec", Autonomy: "Supervised", Target: "make test SHARD=%d", Human: true},
		{Name: "network:http@Supervised quorum 2", Capability: "network:http", Autonomy: "Supervised",
			Target: "https://deploy%d.example.com/v1", Human: true, Quorum: 2},
	}
	nowKinds = []kind{
		{Name: "llm:local", Capability: "llm:local", Autonomy: "Supervised", Want: "allowed"},
		{Name: "code:exec@ReadOnly", Capability: "code:exec", Autonomy: "ReadOnly", Target: "make build-%d", Want: "denied", BlockedBy: "policy"},
		{Name: "fs:read@Full", Capability: "fs:read", Autonomy: "Full", Target: "/srv/soak/in/data-%05d.csv", Want: "allowed"},
		{Name: "network:http@ReadOnly", Capability: "network:http", Autonomy: "ReadOnly", Target: "https://api%d.example.com/v1", Want: "denied", BlockedBy: "policy"},
		{Name: "fs:write ~/.ssh (guard)", Capability: "fs:write", Autonomy: "Full", Target: "~/.ssh/authorized_keys", Want: "denied", BlockedBy: "guard"},
		{Name: "time:read", Capability: "time:read", Autonomy: "ReadOnly", Want: "allowed"},
	}
)

// quorumRoute makes network:http need two approvers: the scripted
// approver's Telegram and Slack identities, one tap on each.
func quorumRoute() string {
	return fmt.Sprintf("[[approvals.routes]]\ncapability = \"network:http\"\nquorum = 2\napprovers = [\"telegram:%d\", \"slack:%s\"]\n\n",
		tgApproverID, slackApprover)
}

// loadKind is the mix: one request in three needs a person (of those, three
// in five fs:write, one code:exec, which offers no Allow always, and one
// network:http that needs two approvers).
func loadKind(i int) kind {
	if i%3 == 0 {
		switch (i / 3) % 5 {
		case 4:
			return humanKinds[1]
		case 2:
			return humanKinds[2]
		}
		return humanKinds[0]
	}
	return nowKinds[(i/3+i)%len(nowKinds)]
}

// body is the JSON an agent posts: its args carry unique secret values
// that must never reach a log.
func (k kind) body(callID string, i int, timeoutS float64) map[string]any {
	target := k.Target
	if strings.Contains(target, "%") {
		target = fmt.Sprintf(target, i)
	}
	b := map[string]any{
		"call_id": callID, "capability": k.Capability, "target": target, "autonomy": k.Autonomy,
		"intent": "soak: write the nightly report", "executor": "report_writer", "summary": "soak request " + callID,
		"args": map[string]any{
			"path":    target,
			"api_key": fmt.Sprintf("%s%d-%s", argValuePrefix, i, randHex(6)),
			"body":    map[string]any{"password": fmt.Sprintf("%sp%d", argValuePrefix, i)},
			"lines":   []any{fmt.Sprintf("%sl%d", argValuePrefix, i), 42},
		},
	}
	if timeoutS > 0 {
		b["timeout_s"] = timeoutS
	}
	return b
}

func hashOf(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// tapPlan: one request in ten is tapped on Telegram and Slack at the same
// moment, with different decisions; the others alternate by id.
func tapPlan(id string) []string {
	switch h := hashOf(id); {
	case h%10 == 0:
		return []string{"telegram", "slack"}
	case h%2 == 0:
		return []string{"telegram"}
	}
	return []string{"slack"}
}

// loadResult is what one agent saw of one request.
type loadResult struct {
	I          int
	Agent      int
	Kind       kind
	Sent, Done time.Time
	Status     int
	Final      reqView
	Polls      int
	Err        error
}

func runLoad(t *testing.T) {
	const sc = "1. load"
	loadStart := loadAvg()
	nAgents := envInt("SOAK_AGENTS", 1000)
	nReq := envInt("SOAK_REQUESTS", 10000)
	dur := envDuration("SOAK_DURATION", 5*time.Minute)
	t.Logf("%d agents, %d requests over %s", nAgents, nReq, dur)

	sec := newSecrets()
	tg := telegramtest.New(t, telegramtest.Options{Token: sec.TelegramToken, CallBuffer: 1})
	sl := slacktest.New(slacktest.Options{BotToken: sec.SlackBotToken, CallBuffer: 1})
	defer sl.Close()
	dir := t.TempDir()
	agents := makeAgents(nAgents)
	spec := gwSpec{Dir: dir, Agents: agents, Secrets: sec, TelegramEndpoint: tg.Endpoint(), SlackAPI: sl.APIURL(),
		Timeout: "10m", LogLevel: "info", Routes: quorumRoute()}
	cfgPath, env := spec.write(t)
	gw := startChild(t, cfgPath, env, spec.logPath())
	stopped := false
	defer func() {
		if !stopped {
			gw.kill()
		}
	}()
	if _, ok := tg.Await(30*time.Second, func(c telegramtest.Call) bool { return c.Method == "setMyCommands" }); !ok {
		t.Fatal("the gateway never reached the fake Telegram (setMyCommands, at start)")
	}
	report.add(sc, "setup", "1 gateway process (`gateway serve`, %s), %d agents, fake Telegram + fake Slack on loopback, notify telegram+slack+web; start to ready %s",
		storeName(), nAgents, ms(gw.ready))

	smp := startSampler(gw.pid(), gw.URL, 5*time.Second)
	ap := newApprover(tg, sl, sec.SlackSigning, func() string { return gw.URL })
	defer ap.close()
	ap.plan = tapPlan
	ap.think = func() time.Duration { return 2*time.Second + rand.N(28*time.Second) }
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { ap.watch(watchCtx); close(watched) }()
	defer func() { stopWatch(); <-watched }()

	cl := newAPI(gw.URL, 90*time.Second)
	defer cl.close()
	results := make([]loadResult, nReq)
	var waiting, maxWaiting, answered atomic.Int64
	var wg sync.WaitGroup
	interval := dur / time.Duration(nReq)
	start := time.Now()
	nextLog := start.Add(30 * time.Second)
	for i := range nReq {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if time.Now().After(nextLog) {
			nextLog = nextLog.Add(30 * time.Second)
			t.Logf("t+%s: %d sent, %d answered, %d agents waiting for a person, RSS %d MiB",
				time.Since(start).Round(time.Second), i, answered.Load(), waiting.Load(), rssKiB(gw.pid())>>10)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer answered.Add(1)
			k := loadKind(i)
			a := (i * 7) % nAgents // every agent gets nReq/nAgents requests, spread over the run
			res := loadResult{I: i, Agent: a, Kind: k, Sent: time.Now()}
			defer func() { results[i] = res }()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if k.Human {
				n := waiting.Add(1)
				for m := maxWaiting.Load(); n > m && !maxWaiting.CompareAndSwap(m, n); m = maxWaiting.Load() {
				}
				defer waiting.Add(-1)
			}
			tok := agents[a].Token
			res.Status, res.Final, res.Err = cl.call(ctx, http.MethodPost, "/v1/requests?wait=60s", tok,
				k.body(fmt.Sprintf("load-%05d", i), i, 0))
			for res.Err == nil && res.Status == http.StatusAccepted && ctx.Err() == nil {
				res.Polls++
				res.Status, res.Final, res.Err = cl.call(ctx, http.MethodGet, "/v1/requests/"+res.Final.ID+"?wait=60s", tok, nil)
			}
			res.Done = time.Now()
		}()
	}
	sentIn := time.Since(start)
	t.Logf("all %d requests sent in %s; waiting for the last answers", nReq, sentIn.Round(time.Millisecond))
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-allDone:
	case <-time.After(5 * time.Minute):
		t.Fatalf("agents still waiting 5 minutes after the last request: %d", waiting.Load())
	}
	ap.pending.Wait()
	elapsed := time.Since(start)

	// Every human request's cards should now show the outcome.
	var humanIDs []string
	for _, r := range results {
		if r.Kind.Human && r.Final.ID != "" {
			humanIDs = append(humanIDs, r.Final.ID)
		}
	}
	staleDeadline := time.Now().Add(90 * time.Second)
	var staleTG, staleSL int
	for {
		staleTG, staleSL = 0, 0
		for _, id := range humanIDs {
			tgDone, slDone := ap.finishedOnCards(id)
			if !tgDone {
				staleTG++
			}
			if !slDone {
				staleSL++
			}
		}
		if staleTG+staleSL == 0 || time.Now().After(staleDeadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Let the gateway's idle keep-alive connections go, so the last
	// sample shows what it holds with no client.
	cl.close()
	ap.close()
	time.Sleep(time.Second)
	samples := smp.stop()
	stopWatch()
	<-watched
	took, err := gw.stop(30 * time.Second)
	stopped = true
	if err != nil {
		failf(t, sc, "graceful stop: %v", err)
	}

	// Verify against the database and the audit trail.
	ac, err := checkAudit(context.Background(), spec.dbPath())
	if err != nil {
		t.Fatalf("read the database: %v", err)
	}
	for _, p := range first(ac.Problems, 20) {
		failf(t, sc, "audit: %s", p)
	}
	var (
		lost, mismatched, wrongPolicy, tapMismatch, doubles int
		doubleWon                                           = map[string]int{}
		nowLat, tapLat, tapLatTG, tapLatSL, cardTG, cardSL  durations
		byStatus                                            = map[string]int{}
		unanswered, tapErrs                                 int
		polls                                               int
		quorumReqs, quorumBad, quorumGrants                 int
	)
	for _, r := range results {
		polls += r.Polls
		if r.Err != nil || r.Final.ID == "" || r.Final.Status == "pending" || r.Final.Status == "" {
			lost++
			if lost <= 10 {
				failf(t, sc, "request %d (%s): agent got %d %v %+v", r.I, r.Kind.Name, r.Status, r.Err, r.Final)
			}
			continue
		}
		byStatus[r.Final.Status]++
		db, ok := ac.Requests[r.Final.ID]
		if !ok {
			lost++
			failf(t, sc, "request %s (%d) is not in the database", r.Final.ID, r.I)
			continue
		}
		if db.Status != r.Final.Status || db.Decision != r.Final.decision() {
			mismatched++
			failf(t, sc, "request %s: the agent was told %s/%s, the database says %s/%s", r.Final.ID, r.Final.Status,
				r.Final.decision(), db.Status, db.Decision)
		}
		if !r.Kind.Human {
			nowLat = append(nowLat, r.Done.Sub(r.Sent))
			blocked := ""
			if r.Final.BlockedBy != nil {
				blocked = *r.Final.BlockedBy
			}
			if r.Final.Status != r.Kind.Want || r.Final.DecidedBy != "policy" || blocked != r.Kind.BlockedBy {
				wrongPolicy++
				failf(t, sc, "request %s (%s): %s by %q blocked_by %q, want %s blocked_by %q", r.Final.ID, r.Kind.Name,
					r.Final.Status, r.Final.DecidedBy, blocked, r.Kind.Want, r.Kind.BlockedBy)
			}
			continue
		}
		c, _ := ap.card(r.Final.ID)
		if !c.tgSeen.IsZero() {
			cardTG = append(cardTG, c.tgSeen.Sub(r.Sent))
		}
		if !c.slSeen.IsZero() {
			cardSL = append(cardSL, c.slSeen.Sub(r.Sent))
		}
		taps := ap.tapsOf(r.Final.ID)
		var won *tap
		for i := range taps {
			if taps[i].Err != nil {
				tapErrs++
				failf(t, sc, "tap on %s: %v", r.Final.ID, taps[i].Err)
			}
			if string(taps[i].Decision) == r.Final.decision() && strings.HasPrefix(r.Final.DecidedBy, taps[i].Channel+":") {
				won = &taps[i]
			}
			if taps[i].QueryID != "" {
				if n := len(tg.Answers(taps[i].QueryID)); n != 1 {
					unanswered++
					failf(t, sc, "Telegram tap %s on %s answered %d times, want once", taps[i].QueryID, r.Final.ID, n)
				}
			}
		}
		if len(taps) > 1 && r.Kind.Quorum <= 1 {
			doubles++
		}
		if won == nil {
			tapMismatch++
			failf(t, sc, "request %s: decided %s by %q, which no tap asked for (taps %+v)", r.Final.ID,
				r.Final.decision(), r.Final.DecidedBy, taps)
			continue
		}
		if r.Kind.Quorum > 1 {
			quorumReqs++
			counted := map[string]bool{}
			for _, a := range r.Final.Approvals {
				counted[a.Approver] = true
			}
			if r.Final.Status != "allowed" || r.Final.Quorum != r.Kind.Quorum || len(r.Final.Approvals) != r.Kind.Quorum ||
				len(counted) != r.Kind.Quorum {
				quorumBad++
				failf(t, sc, "quorum request %s: %s, quorum %d, approvals %+v", r.Final.ID, r.Final.Status, r.Final.Quorum,
					r.Final.Approvals)
			}
			if r.Final.decision() == string(approvals.AllowAlways) {
				quorumGrants++
			}
		} else if len(taps) > 1 {
			doubleWon[won.Channel]++
		}
		d := r.Done.Sub(won.At)
		tapLat = append(tapLat, d)
		if won.Channel == "telegram" {
			tapLatTG = append(tapLatTG, d)
		} else {
			tapLatSL = append(tapLatSL, d)
		}
	}
	if len(ac.Requests) != nReq {
		failf(t, sc, "the database holds %d requests, the agents sent %d", len(ac.Requests), nReq)
	}
	dupTG, dupSL := ap.dupes()
	missingTG, missingSL := 0, 0
	for _, id := range humanIDs {
		c, _ := ap.card(id)
		if c.tgCount == 0 {
			missingTG++
		}
		if c.slCount == 0 {
			missingSL++
		}
	}
	for what, n := range map[string]int{"lost requests": lost, "agent/database mismatches": mismatched,
		"policy outcomes unexpected": wrongPolicy, "decisions no tap asked for": tapMismatch,
		"Telegram taps not answered once": unanswered, "failed taps": tapErrs, "quorum-2 requests not allowed by both": quorumBad,
		"Telegram cards missing": missingTG, "Slack cards missing": missingSL,
		"duplicate Telegram cards": dupTG, "duplicate Slack cards": dupSL,
		"Telegram cards not edited to the outcome": staleTG, "Slack cards not updated to the outcome": staleSL} {
		if n != 0 {
			failf(t, sc, "%s: %d", what, n)
		}
	}

	humans := len(humanIDs)
	report.add(sc, "requests", "%d in %s (%.1f/s sent; run %s incl. the last answers), %d needing a person (%.1f%%), %d decided on arrival",
		nReq, sentIn.Round(time.Second), float64(nReq)/sentIn.Seconds(), elapsed.Round(time.Second), humans,
		100*float64(humans)/float64(nReq), nReq-humans)
	report.add(sc, "final states", "%s", statusLine(byStatus))
	report.add(sc, "lost / double-decided", "%d lost · %d double-decided", lost, countDouble(ac))
	report.add(sc, "audit trail", "%d rows, ids 1..%d, %d gaps: %d outcome (1 per request), %d decision (1 per request a person decided), %d grant_written, %d other",
		ac.Rows, ac.MaxID, ac.Gaps, outcomeRows(ac), ac.Decisions, ac.GrantsMade, ac.Rows-outcomeRows(ac)-ac.Decisions-ac.GrantsMade)
	report.add(sc, "agent answer = database", "%d mismatches (%d long-poll re-asks)", mismatched, polls)
	report.add(sc, "double taps (Telegram + Slack at once, different buttons)", "%d, each decided once (Telegram won %d, Slack %d); every Telegram tap answered once",
		doubles, doubleWon["telegram"], doubleWon["slack"])
	report.add(sc, "quorum 2 (network:http: a Telegram and a Slack approver, tapped at once)", "%d requests, each allowed once both were counted (%d by two Allow always, with a grant), %d wrong",
		quorumReqs, quorumGrants, quorumBad)
	report.add(sc, "latency, decided on arrival (POST → answer)", "%s", nowLat)
	report.add(sc, "latency, tap → waiting agent's answer", "%s", tapLat)
	report.add(sc, "  via Telegram (callback_query via getUpdates)", "%s", tapLatTG)
	report.add(sc, "  via Slack (signed interaction POST)", "%s", tapLatSL)
	report.add(sc, "card on the fake after the request (Telegram / Slack)", "%s / %s", cardTG, cardSL)
	report.add(sc, "people: think time / peak agents waiting", "2–30 s uniform / %d", maxWaiting.Load())
	report.add(sc, "cards", "%d Telegram + %d Slack, 0 missing, %d/%d duplicates, all edited to the outcome",
		humans-missingTG, humans-missingSL, dupTG, dupSL)
	report.add(sc, "RSS of the gateway (MiB)", "%s", rssLine(samples))
	peak := rssPeak(samples)
	report.add(sc, "RSS peak of the gateway (MiB; goal ≤ 60 on SQLite)", "%.1f (anonymous %.1f + files mapped %.1f, the executable's pages)",
		float64(peak.RSSKiB)/1024, float64(peak.AnonKiB)/1024, float64(peak.FileKiB)/1024)
	report.add(sc, "anonymous RSS of the gateway (MiB: heap, stacks, SQLite's caches)", "%s", anonLine(samples))
	report.add(sc, "RSS series (MiB, every 30 s)", "%s", rssSeries(samples, 30*time.Second))
	report.add(sc, "goroutines in the gateway", "%s", goroutineLine(samples))
	report.add(sc, "graceful stop (SIGTERM)", "%s", ms(took))
	report.add(sc, "host load average (1/5/15 min)", "%s at the start → %s at the end", loadStart, loadAvg())
	checkNoSecrets(t, sc, sec, []string{spec.logPath()}, spec.vaglioDir(), dbDir(spec.dbPath()))
}

// dbDir is the database's directory: the file, its WAL and SHM.
func dbDir(db string) string { return db[:strings.LastIndex(db, "/")] }

func first(s []string, n int) []string { return s[:min(len(s), n)] }

// countDouble counts requests with more than one decision row.
func countDouble(ac auditCheck) int {
	n := 0
	for _, r := range ac.Requests {
		if r.Finishes > 1 {
			n++
		}
	}
	return n
}

func outcomeRows(ac auditCheck) int {
	n := 0
	for _, r := range ac.Requests {
		n += r.Outcomes
	}
	return n
}

func statusLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, " · ")
}

func rssLine(s []sample) string {
	if len(s) == 0 {
		return "n/a"
	}
	var v []int
	for _, x := range s {
		if x.RSSKiB > 0 {
			v = append(v, x.RSSKiB)
		}
	}
	if len(v) == 0 {
		return "n/a"
	}
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	mib := func(k int) string { return fmt.Sprintf("%.1f", float64(k)/1024) }
	return fmt.Sprintf("start %s · min %s · median %s · max %s · end %s (%d samples)", mib(v[0]), mib(sorted[0]),
		mib(sorted[len(sorted)/2]), mib(sorted[len(sorted)-1]), mib(v[len(v)-1]), len(v))
}

// rssPeak is the sample with the highest RSS.
func rssPeak(s []sample) sample {
	var peak sample
	for _, x := range s {
		if x.RSSKiB > peak.RSSKiB {
			peak = x
		}
	}
	return peak
}

// anonLine is the anonymous RSS at the start, its highest and at the end.
func anonLine(s []sample) string {
	var v []int
	for _, x := range s {
		if x.AnonKiB > 0 {
			v = append(v, x.AnonKiB)
		}
	}
	if len(v) == 0 {
		return "n/a"
	}
	mib := func(k int) string { return fmt.Sprintf("%.1f", float64(k)/1024) }
	return fmt.Sprintf("start %s · max %s · end %s", mib(v[0]), mib(slices.Max(v)), mib(v[len(v)-1]))
}

func rssSeries(s []sample, every time.Duration) string {
	var parts []string
	next, last := time.Duration(0), -1
	for i, x := range s {
		if x.At >= next {
			parts = append(parts, fmt.Sprintf("%d:%02d %.0f", int(x.At.Minutes()), int(x.At.Seconds())%60, float64(x.RSSKiB)/1024))
			next, last = x.At.Truncate(every)+every, i
		}
	}
	if n := len(s) - 1; n > last {
		x := s[n]
		parts = append(parts, fmt.Sprintf("%d:%02d %.0f", int(x.At.Minutes()), int(x.At.Seconds())%60, float64(x.RSSKiB)/1024))
	}
	return strings.Join(parts, " · ")
}

func goroutineLine(s []sample) string {
	if len(s) == 0 {
		return "n/a"
	}
	mx := 0
	for _, x := range s {
		mx = max(mx, x.Goroutines)
	}
	return fmt.Sprintf("start %d · max %d · end %d", s[0].Goroutines, mx, s[len(s)-1].Goroutines)
}

// decisionStatus is the status a decision leads to.
func decisionStatus(d string) string {
	if d == string(approvals.Deny) {
		return "denied"
	}
	return "allowed"
}
