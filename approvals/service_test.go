package approvals_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"
	"github.com/metnos/gateway/internal/testclock"

	"go.uber.org/goleak"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/storage/storagetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClock is a clock the test moves by hand.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)) }

const (
	day       = 24 * time.Hour
	agentKey  = "agent-token-for-hmac"
	grantTTL  = 90 * day
	staleTTL  = 90 * day
	retention = 365 * day
)

type fixture struct {
	svc    *approvals.Service
	db     *storage.DB
	grants *policy.GrantStore
	clock  *testclock.Clock
}

// newFixture builds a Service over a fresh database (SQLite, or
// PostgreSQL in the PostgreSQL run: see TestPostgres) with the SPEC's
// defaults and no vaglio step.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, storagetest.Open(t), newClock())
}

// newFixtureOn is newFixture over a given database and clock (several
// replicas on one database share both).
func newFixtureOn(t *testing.T, db *storage.DB, c *testclock.Clock, routes ...approvals.Route) *fixture {
	t.Helper()
	f := newFixtureOnClock(t, db, c.Now, routes...)
	f.clock = c
	return f
}

// newFixtureOnClock is newFixtureOn with any clock (time.Now for tests of
// the background loops).
func newFixtureOnClock(t *testing.T, db *storage.DB, now func() time.Time, routes ...approvals.Route) *fixture {
	t.Helper()
	return newFixtureWith(t, db, now, func(o *approvals.Options) { o.Routes = routes })
}

// newFixtureWith is newFixtureOnClock with the service's options changed
// by set (a logger, other limits).
func newFixtureWith(t *testing.T, db *storage.DB, now func() time.Time, set func(*approvals.Options)) *fixture {
	t.Helper()
	norm := policy.Normalizer{Home: "/home/owner"}
	grants := policy.NewGrantStore(db, norm, now)
	opts := approvals.Options{
		GrantTTL: grantTTL, StaleAfter: staleTTL, Retention: retention, Now: now,
		AllowFor: []time.Duration{2 * time.Second, time.Hour},
		CallbackKey: func(agent string) []byte {
			if agent == "gone" { // an agent no longer in the config
				return nil
			}
			return []byte(agentKey)
		},
		CallbackAllowed: func(agent, url string) (callbackurl.Allowed, error) {
			return callbackurl.Check([]string{"http://127.0.0.1:*/*"}, url)
		},
	}
	set(&opts)
	svc := approvals.New(db, grants, &policy.Decider{Grants: grants, Norm: norm}, opts)
	return &fixture{svc: svc, db: db, grants: grants}
}

var profile = policy.Profile{Agent: "a1", Ceiling: policy.Supervised}

func (f *fixture) submit(t *testing.T, callID, target string, timeout time.Duration) approvals.Request {
	t.Helper()
	r, created, err := f.svc.Submit(context.Background(), approvals.Submission{
		Profile: profile, CallID: callID, Capability: "fs:read", Target: target,
		Channel: "web", SenderID: "owner", Timeout: timeout,
	})
	if err != nil || !created || r.Status != approvals.StatusPending {
		t.Fatalf("submit %s: %v (created %v, status %s)", callID, err, created, r.Status)
	}
	return r
}

func (f *fixture) auditEvents(t *testing.T, requestID string) map[string]int {
	t.Helper()
	rows, err := storage.ListAudit(context.Background(), f.db, requestID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Event]++
	}
	return out
}

func (f *fixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := f.db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestDecide_50ConcurrentDeciders: 50 goroutines decide one request with
// a mix of decisions; exactly one wins, the 49 others are told who did,
// at most one grant and exactly one decision row are written. Run with -race.
func TestDecide_50ConcurrentDeciders(t *testing.T) {
	f := newFixture(t)
	decisions := []approvals.Decision{approvals.AllowOnce, approvals.Deny, approvals.AllowAlways}
	for round := range 5 {
		r := f.submit(t, fmt.Sprintf("race-%d", round), fmt.Sprintf("/srv/race/%d.txt", round), time.Hour)
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 50)
		wins := make([]approvals.Request, 50)
		for i := range 50 {
			wg.Go(func() {
				<-start
				wins[i], errs[i] = f.svc.Decide(context.Background(), r.ID, decisions[(i+round)%3],
					approvals.Actor{Channel: "web", ID: fmt.Sprint(i)})
			})
		}
		close(start)
		wg.Wait()
		var winner approvals.Request
		won, refused := 0, 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
				winner = wins[i]
			case errors.Is(err, approvals.ErrAlreadyDecided):
				refused++
			default:
				t.Errorf("round %d decider %d: %v", round, i, err)
			}
		}
		if won != 1 || refused != 49 {
			t.Fatalf("round %d: %d won, %d refused, want 1 and 49", round, won, refused)
		}
		for _, err := range errs {
			var ad *approvals.AlreadyDecidedError
			if errors.As(err, &ad) && (ad.Request.Decision == nil || *ad.Request.Decision != *winner.Decision ||
				ad.Request.DecidedBy != winner.DecidedBy) {
				t.Errorf("round %d: a loser was told %v by %q, the winner decided %s by %q", round,
					ad.Request.Decision, ad.Request.DecidedBy, *winner.Decision, winner.DecidedBy)
				break
			}
		}
		ev := f.auditEvents(t, r.ID)
		if ev[storage.AuditDecision] != 1 || ev[storage.AuditGrantWritten] > 1 {
			t.Errorf("round %d: audit %v", round, ev)
		}
		grants := f.count(t, `SELECT COUNT(*) FROM grants WHERE request_id = $1`, r.ID)
		if wantGrant := *winner.Decision == approvals.AllowAlways; grants > 1 || (grants == 1) != wantGrant {
			t.Errorf("round %d: %d grants after %s", round, grants, *winner.Decision)
		}
		got, err := f.svc.Get(context.Background(), r.ID)
		if err != nil || got.Status != winner.Status || *got.Decision != *winner.Decision {
			t.Errorf("round %d: stored %s %v, the winner got %s %s", round, got.Status, got.Decision, winner.Status, *winner.Decision)
		}
	}
}

// TestDecide_RacesCancelAndExpiry: deciders, cancellers and the expiry
// sweep race on one overdue request; exactly one of them finishes it.
func TestDecide_RacesCancelAndExpiry(t *testing.T) {
	f := newFixture(t)
	for round := range 5 {
		r := f.submit(t, fmt.Sprintf("mix-%d", round), "/srv/mix.txt", approvals.MinTimeout)
		if round%2 == 0 {
			f.clock.Add(approvals.MinTimeout) // overdue: Decide and the sweep expire it
		}
		var wg sync.WaitGroup
		var ok atomic.Int32
		start := make(chan struct{})
		for i := range 30 {
			wg.Go(func() {
				<-start
				var err error
				switch i % 3 {
				case 0:
					_, err = f.svc.Decide(context.Background(), r.ID, approvals.AllowOnce, approvals.Actor{Channel: "api", ID: "x"})
				case 1:
					_, err = f.svc.Cancel(context.Background(), r.ID, "a1", "")
				default:
					_, err = f.svc.ExpireDue(context.Background())
					if err == nil {
						return
					}
				}
				if err == nil {
					ok.Add(1)
				} else if !errors.Is(err, approvals.ErrAlreadyDecided) {
					t.Errorf("unexpected error: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		ev := f.auditEvents(t, r.ID)
		if n := ev[storage.AuditDecision] + ev[storage.AuditCancelled] + ev[storage.AuditExpired]; n != 1 {
			t.Errorf("round %d: %d final audit rows %v, want 1", round, n, ev)
		}
		// An overdue request is never allowed: it ends expired, or
		// cancelled by its agent before the sweep reached it.
		if round%2 == 0 && (ev[storage.AuditDecision] != 0 || int(ok.Load()) != ev[storage.AuditCancelled]) {
			t.Errorf("round %d: overdue request: %d calls succeeded, audit %v", round, ok.Load(), ev)
		}
		if round%2 == 1 && ok.Load() != 1 {
			t.Errorf("round %d: %d decisions or cancels succeeded, want 1", round, ok.Load())
		}
	}
}

func TestSubmit_IdempotentConcurrent(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	ids := make([]string, 20)
	created := make([]bool, 20)
	for i := range 20 {
		wg.Go(func() {
			r, c, err := f.svc.Submit(context.Background(), approvals.Submission{
				Profile: profile, CallID: "same", Capability: "fs:read", Target: "/srv/x", Channel: "web", SenderID: "owner",
			})
			if err != nil {
				t.Errorf("submit: %v", err)
			}
			ids[i], created[i] = r.ID, c
		})
	}
	wg.Wait()
	n := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Errorf("ids %s and %s for one call_id", ids[0], ids[i])
		}
		if created[i] {
			n++
		}
	}
	if n != 1 || f.count(t, `SELECT COUNT(*) FROM requests`) != 1 || f.auditEvents(t, ids[0])[storage.AuditOutcome] != 1 {
		t.Errorf("%d submits report created; %d rows; audit %v", n, f.count(t, `SELECT COUNT(*) FROM requests`), f.auditEvents(t, ids[0]))
	}
}

func TestExpireDue_InjectedClock(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	short := f.submit(t, "short", "/srv/a", time.Minute)
	long := f.submit(t, "long", "/srv/b", time.Hour)
	ch := f.svc.Subscribe(ctxT(t), "a1")
	waited := make(chan approvals.Request, 1)
	go func() {
		r, _ := f.svc.Wait(ctx, short.ID, time.Minute)
		waited <- r
	}()
	if n, err := f.svc.ExpireDue(ctx); n != 0 || err != nil {
		t.Fatalf("ExpireDue before the time: %d, %v", n, err)
	}
	f.clock.Add(time.Minute)
	if n, err := f.svc.ExpireDue(ctx); n != 1 || err != nil {
		t.Fatalf("ExpireDue at the time: %d, %v", n, err)
	}
	if n, _ := f.svc.ExpireDue(ctx); n != 0 {
		t.Errorf("a second sweep expired %d more", n)
	}
	select {
	case r := <-waited:
		if r.Status != approvals.StatusExpired || r.DecidedBy != "timeout" || r.Decision != nil {
			t.Errorf("waiter got %s %q %v", r.Status, r.DecidedBy, r.Decision)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait not woken by the expiry")
	}
	select {
	case e := <-ch:
		if e.Kind != approvals.EventResolved || e.Request.ID != short.ID || e.Request.Status != approvals.StatusExpired {
			t.Errorf("event %s %s %s", e.Kind, e.Request.ID, e.Request.Status)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no event for the expiry")
	}
	if r, _ := f.svc.Get(ctx, long.ID); r.Status != approvals.StatusPending {
		t.Errorf("the long request is %s", r.Status)
	}
	_, err := f.svc.Decide(ctx, short.ID, approvals.AllowOnce, approvals.Actor{Channel: "web", ID: "owner"})
	var ad *approvals.AlreadyDecidedError
	if !errors.As(err, &ad) || ad.Request.Status != approvals.StatusExpired || ad.Error() != "request "+short.ID+" already expired by timeout" {
		t.Errorf("Decide after expiry: %v", err)
	}
	// Decide itself expires an overdue request the sweep has not reached.
	f.clock.Add(time.Hour)
	_, err = f.svc.Decide(ctx, long.ID, approvals.AllowOnce, approvals.Actor{Channel: "web", ID: "owner"})
	if !errors.As(err, &ad) || ad.Request.Status != approvals.StatusExpired {
		t.Errorf("Decide on an overdue request: %v", err)
	}
	if ev := f.auditEvents(t, long.ID); ev[storage.AuditExpired] != 1 || ev[storage.AuditDecision] != 0 {
		t.Errorf("audit %v", ev)
	}
}

// ctxT is a context that ends with the test.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// TestDecide_ContextCanceledMidway: a decision whose context ends does not
// panic or report a finished request it did not finish.
func TestDecide_CanceledContext(t *testing.T) {
	f := newFixture(t)
	r := f.submit(t, "cc", "/srv/cc", time.Minute)
	f.clock.Add(time.Hour) // overdue: Decide takes its expiry path
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.svc.Decide(ctx, r.ID, approvals.AllowOnce, approvals.Actor{Channel: "web", ID: "o"}); err == nil {
		t.Fatal("Decide with a canceled context succeeded")
	}
	if got, _ := f.svc.Get(context.Background(), r.ID); got.Status != approvals.StatusPending {
		t.Errorf("status %s after a canceled Decide", got.Status)
	}
}

func TestCallback_SignedAndRetried(t *testing.T) {
	f := newFixture(t)
	var calls atomic.Int32
	type delivery struct {
		body []byte
		at   time.Time
	}
	got := make(chan delivery, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		if !approvals.VerifySignature([]byte(agentKey), body, r.Header.Get(approvals.SignatureHeader)) {
			t.Errorf("bad signature %q over %s", r.Header.Get(approvals.SignatureHeader), body)
		}
		got <- delivery{body, time.Now()}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(ctx) }()
	r, _, err := f.svc.Submit(context.Background(), approvals.Submission{
		Profile: profile, CallID: "cb", Capability: "fs:read", Target: "/srv/cb", Channel: "web", SenderID: "owner",
		CallbackURL: srv.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Decide(context.Background(), r.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "o"}); err != nil {
		t.Fatal(err)
	}
	decided := time.Now()
	select {
	case d := <-got:
		want := fmt.Sprintf(`{"id":"%s","call_id":"cb","command":"/srv/cb","decision":"deny","status":"denied"}`, r.ID)
		if string(d.body) != want {
			t.Errorf("callback body %s, want %s", d.body, want)
		}
		// The retry comes a second after the failed try: Decide did not wait for it.
		if !decided.Before(d.at) {
			t.Errorf("Decide returned at %s, after the callback's retry at %s", decided, d.at)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("callback not retried")
	}
	// An agent without a key gets no callback: a body signed with an
	// empty key proves nothing.
	gone, _, err := f.svc.Submit(context.Background(), approvals.Submission{
		Profile: policy.Profile{Agent: "gone", Ceiling: policy.Supervised}, CallID: "cb-gone", Capability: "fs:read",
		Target: "/srv/cb", Channel: "web", SenderID: "owner", CallbackURL: srv.URL,
	})
	if err != nil {
		t.Fatal(err)
	}
	before := calls.Load()
	if _, err := f.svc.Decide(context.Background(), gone.ID, approvals.Deny, approvals.Actor{Channel: "web", ID: "o"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := calls.Load(); n != before {
		t.Errorf("%d callbacks sent for an agent without a key", n-before)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !approvals.VerifySignature([]byte("k"), []byte("b"), approvals.Sign([]byte("k"), []byte("b"))) ||
		approvals.VerifySignature([]byte("k"), []byte("b"), "sha256=00") {
		t.Error("Sign and VerifySignature disagree")
	}
}

// fakeNotifier records posts and updates; it fails the first failPosts posts.
type fakeNotifier struct {
	mu        sync.Mutex
	failPosts int
	posts     []string
	updates   []string
	changed   chan struct{}
}

func (n *fakeNotifier) Name() string { return "fake" }

func (n *fakeNotifier) Post(_ context.Context, r approvals.Request) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer n.signal()
	if n.failPosts > 0 {
		n.failPosts--
		return "", errors.New("fake: 500")
	}
	n.posts = append(n.posts, r.ID)
	return "msg-" + r.ID, nil
}

func (n *fakeNotifier) Update(_ context.Context, r approvals.Request, ref string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	defer n.signal()
	n.updates = append(n.updates, ref+"="+string(r.Status))
	return nil
}

func (n *fakeNotifier) signal() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

func (n *fakeNotifier) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		n.mu.Lock()
		ok := cond()
		n.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-n.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestCards_PostRetryUpdate: a card is posted (after a failed try), the
// decision edits it with the stored reference.
func TestCards_PostRetryUpdate(t *testing.T) {
	f := newFixture(t)
	n := &fakeNotifier{failPosts: 1, changed: make(chan struct{}, 1)}
	f.svc.AddNotifier(n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	r, _, err := f.svc.Submit(context.Background(), approvals.Submission{
		Profile: profile, CallID: "card", Capability: "fs:read", Target: "/srv/card", Channel: "web", SenderID: "owner",
		Notify: []string{"fake", "web", "nosuch"}, Timeout: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notify) != 1 || r.Notify[0] != "fake" {
		t.Errorf("notify %v, want [fake]", r.Notify)
	}
	// The first post fails; the dispatcher retries after its backoff (≤ 1s).
	// The injected clock must move for the retry to be due.
	go func() {
		for ctx.Err() == nil {
			f.clock.Add(time.Second)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	n.waitFor(t, "the card to be posted", func() bool { return len(n.posts) == 1 })
	var ref string
	n.waitFor(t, "the card reference to be stored", func() bool {
		ref, err = f.svc.CardRef(context.Background(), r.ID, "fake")
		return err == nil
	})
	if ref != "msg-"+r.ID {
		t.Errorf("CardRef = %q", ref)
	}
	if got, err := f.svc.RequestByCardRef(context.Background(), "fake", ref); err != nil || got.ID != r.ID {
		t.Errorf("RequestByCardRef = %s, %v", got.ID, err)
	}
	if _, err := f.svc.Decide(context.Background(), r.ID, approvals.AllowOnce, approvals.Actor{Channel: "fake", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	n.waitFor(t, "the card to be edited", func() bool { return len(n.updates) == 1 })
	if n.updates[0] != "msg-"+r.ID+"=allowed" {
		t.Errorf("update %q", n.updates[0])
	}
}

// The decision log line names the decision in words, in a text log too
// (not the address of the request's pointer field).
func TestDecide_LogLineNamesTheDecision(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	f := newFixtureWith(t, storagetest.Open(t), c.Now, func(o *approvals.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	})
	f.clock = c
	r := f.submit(t, "log-1", "/tmp/log", time.Minute)
	if _, err := f.svc.Decide(context.Background(), r.ID, approvals.Deny, approvals.Actor{Channel: "api", ID: "boss"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "msg=decision ") || !strings.Contains(buf.String(), " decision=deny ") {
		t.Errorf("the decision line does not say deny:\n%s", buf.String())
	}
}
