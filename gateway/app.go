package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/metnos/gateway/internal/callbackurl"
	"github.com/metnos/gateway/web"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/messenger"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/vaglio"
)

// AppOptions are the outside world an App runs in.
type AppOptions struct {
	Logger     *slog.Logger
	Now        func() time.Time
	Home       string              // what "~" means in targets
	Messengers []messenger.Factory // built in cmd/gateway from the config
	// BodyTimeout bounds how long a request's body may take (0:
	// BodyTimeout); tests shorten it.
	BodyTimeout time.Duration
	// CallbackResolver resolves callback hosts (nil: the system's); tests
	// make a name resolve to loopback with it.
	CallbackResolver callbackurl.Resolver
	// HostResolver looks up the names of network:http targets where a
	// block rule on an address or the guard's "the gateway is not a
	// target" needs their addresses (policy.AddrCache); nil: names are
	// not resolved. `gateway serve` passes the system's; tests a fake.
	HostResolver policy.Resolver
	// LeaderRetry is how often a replica on PostgreSQL that does not lead
	// tries to take over (default 2 s): a dead leader is replaced within it.
	LeaderRetry time.Duration
	// TokenRecheck is how often open connections of child tokens read
	// theirs again (default 15 s, the SSE heartbeat).
	TokenRecheck time.Duration
	// PushServices are more Web Push services a browser's subscription may
	// name, as origins ("http://127.0.0.1:41234"), besides the browsers'
	// own (push.Services); tests name their fake.
	PushServices []string
	// PushClient posts Web Push messages (nil: one with a 30 s timeout).
	PushClient *http.Client
	// Telemetry traces each request's life (nil: off); its owner shuts it
	// down after Serve, which exports what is still queued.
	Telemetry *telemetry.Provider
}

// App is a whole gateway: database, policy, approvals, server, messengers.
type App struct {
	Config     config.Config
	DB         *storage.DB
	Grants     *policy.GrantStore
	Rules      *policy.RuleStore
	Service    *approvals.Service
	Server     *Server
	Messengers []messenger.Messenger
	log        *slog.Logger
	version    *storage.GrantsVersion
	vaglio     *vaglio.Vaglio
	// leaderRetry is how often a replica that does not lead tries to (and
	// the leader checks its lock); 0 means storage's default of 2 s.
	leaderRetry time.Duration
	// reviewMu keeps this process's weekly review pushes one at a time.
	reviewMu sync.Mutex
}

// usesEvery is how often the leader adds up the grants' uses from the
// audit chain (approvals.CountGrantUses).
const usesEvery = 2 * time.Second

// NewApp opens the database and wires everything; nothing runs yet.
func NewApp(ctx context.Context, cfg config.Config, o AppOptions) (*App, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	db, err := storage.OpenConfig(ctx, storage.Config{Driver: cfg.Storage.Driver, Path: cfg.Storage.Path,
		DSN: cfg.Storage.DSN})
	if err != nil {
		return nil, err
	}
	norm := policy.Normalizer{Home: o.Home}
	grants := policy.NewGrantStore(db, norm, o.Now)
	vg := vaglio.New(vaglio.Options{Threshold: cfg.Vaglio.JudgeThreshold, LogDir: cfg.Vaglio.LogDir,
		Home: o.Home, Now: o.Now, Logger: o.Logger, Judge: NewJudge(cfg.Vaglio, o.Now),
		Own: OwnGuard(cfg, cfg.Server.Listen, nil)})
	// Decisions read grants through a cache that asks SQLite, per decision,
	// whether any process changed them (see policy.GrantCache).
	version := storage.NewGrantsVersion(db)
	// Rules: the file's plus those added at run time, read again whenever
	// any process changed them (see policy.RuleStore).
	rules := policy.NewRuleStore(db, cfg.PolicyRules(), cfg.HasAgent, o.Now)
	decider := &policy.Decider{Source: rules, Grants: policy.NewGrantCache(grants, version), Vaglio: vg, Norm: norm}
	if o.HostResolver != nil {
		decider.Addrs = &policy.AddrCache{Resolver: o.HostResolver, Now: o.Now}
	}
	metrics := NewMetrics()
	a := &App{Config: cfg, DB: db, Grants: grants, Rules: rules, log: o.Logger, version: version, vaglio: vg, leaderRetry: o.LeaderRetry}
	var srv *Server
	a.Service = approvals.New(db, grants, decider, approvals.Options{
		GrantTTL: time.Duration(cfg.Policy.GrantTTL), AllowFor: config.Durations(cfg.Approvals.AllowFor), SessionTTL: time.Duration(cfg.Approvals.SessionTTL), DefaultTimeout: time.Duration(cfg.Approvals.Timeout), StaleAfter: time.Duration(cfg.Policy.StaleAfter),
		Retention: time.Duration(cfg.Approvals.Retention), Now: o.Now, Logger: o.Logger, Observer: metrics, Telemetry: o.Telemetry,
		PolicyStepUp:     cfg.Web.PolicyPasskey(),
		CallbackKey:      func(agent string) []byte { return srv.CallbackKey(agent) },
		CallbackAllowed:  func(agent, url string) (callbackurl.Allowed, error) { return srv.CallbackAllowed(agent, url) },
		CallbackResolver: o.CallbackResolver,
		Routes:           routes(cfg.Approvals.Routes),
		CardsPerMinute:   cardsPerMinute(cfg.Agents),
		Notify:           notifySet(cfg, norm),
		NotifyKey:        func(pattern int, url string) []byte { return notifyKey(cfg.Policy.Notify, pattern, url) },
	})
	srv = NewServer(cfg, Options{Service: a.Service, Decider: decider, Rules: rules,
		Tokens: policy.NewTokenStore(db, norm, o.Now), Metrics: metrics, Logger: o.Logger, Now: o.Now, BodyTimeout: o.BodyTimeout,
		Telemetry: o.Telemetry})
	if o.TokenRecheck > 0 {
		srv.recheck = o.TokenRecheck
	}
	a.Server = srv
	wp, err := web.NewPush(ctx, cfg, db, web.PushOptions{Now: o.Now, Services: o.PushServices, Client: o.PushClient,
		Logger: o.Logger, Observer: metrics})
	if err != nil {
		db.Close()
		return nil, err
	}
	srv.push = wp
	srv.page.SetPush(wp)
	a.Service.AddNotifier(wp.Notifier())
	for _, f := range o.Messengers {
		m, err := f(a.Service, srv)
		if err != nil {
			db.Close()
			return nil, err
		}
		a.Service.AddNotifier(m)
		m.Routes(srv)
		a.Messengers = append(a.Messengers, m)
	}
	return a, nil
}

// Serve runs the gateway on ln until ctx ends, then shuts down gracefully:
// stop accepting, let in-flight requests finish, stop the background work.
// Pending requests stay pending in the database.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	// The listener's port is known now (server.listen may say :0).
	a.vaglio.SetOwn(OwnGuard(a.Config, ln.Addr().String(), nil))
	// Requests that expired while the gateway was down are expired before
	// the first answer (SPEC §5): else the first calls still see them pending.
	for {
		n, err := a.Service.ExpireDue(ctx)
		if err != nil {
			return stoppedOr(ctx, err)
		}
		if n == 0 {
			break
		}
	}
	// Users removed from [[web.users]] leave now: their sessions end and
	// their links are spent in the database, so no replica still on the
	// older config lets them in either.
	gone, err := a.Server.sessions.EndGone(ctx)
	if err != nil {
		return stoppedOr(ctx, err)
	}
	if len(gone) > 0 {
		a.log.Warn("web users no longer configured: their sessions ended and login links spent", "users", gone)
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	// Every replica: the expiry sweep, and on PostgreSQL the notices of
	// the other replicas' changes (they wake this replica's waiters).
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := a.Service.RunSweep(bg); err != nil {
			errs <- fmt.Errorf("approvals: %w", err)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = a.DB.Listen(bg, a.log, func(msg string) {
			a.Service.Notice(bg, msg)
			if a.Server.tokens != nil {
				a.Server.tokens.Heard(msg) // a revoke on another replica closes streams here
			}
		})
	}()
	// On PostgreSQL this replica's lease on the change counters: decisions
	// skip reading them while it runs (see storage.DB.HoldLease).
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = a.DB.HoldLease(bg, a.log)
	}()
	// The leader only (on SQLite, this process from the start): see lead.
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := a.DB.Lead(bg, storage.LeaderOptions{Retry: a.leaderRetry, Logger: a.log, OnChange: a.Server.SetLeader}, a.lead)
		if err != nil && bg.Err() == nil {
			errs <- err
		}
	}()
	hs := &http.Server{
		Handler:           a.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		a.log.Error("background work failed; shutting down", "err", runErr)
	case runErr = <-served:
	}
	a.Server.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		a.log.Warn("http shutdown", "err", err)
	}
	a.Server.DrainMCP(sctx)
	stopBG()
	wg.Wait()
	if errors.Is(runErr, http.ErrServerClosed) {
		runErr = nil
	}
	return runErr
}

// lead runs the work that must not run on two replicas at once: the card
// dispatchers (a card is posted once), escalations and reminders (sent
// once), the prune job and the digest, and each messenger's
// background work (Telegram long polling: two pollers would steal each
// other's updates; Slack Socket Mode: Slack would deliver each event to
// one connection at random). HTTP (webhooks, Slack interactivity, the API
// and the web page) works on every replica. It returns when ctx ends, or
// with the first error of that work, once all of it has stopped.
func (a *App) lead(ctx context.Context) error {
	stopSchedule, err := a.Service.StartScheduler(ctx, a.Config.Approvals.PruneSchedule, a.Config.Server.Zone(),
		a.digestJobs()...)
	if err != nil {
		return err
	}
	defer stopSchedule()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(a.Messengers))
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Service.RunDispatch(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Service.RunTimers(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.runBulletins(ctx)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.Service.RunGrantUses(ctx, usesEvery)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.runReview(ctx)
	}()
	for _, m := range a.Messengers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s: %w", m.Name(), err)
			}
		}()
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	cancel()
	wg.Wait()
	return err
}

// routes converts [[approvals.routes]] for the approval service.
func routes(in []config.Route) []approvals.Route {
	out := make([]approvals.Route, len(in))
	for i, r := range in {
		out[i] = approvals.Route{Capability: r.Capability, Agent: r.Agent, Critical: r.Critical, Notify: r.Notify,
			Approvers: r.Approvers, Quorum: r.Quorum, EscalateAfter: time.Duration(r.EscalateAfter), EscalateTo: r.EscalateTo,
			RemindEvery: time.Duration(r.RemindEvery), StepUp: r.StepUp, Guard: r.Guard(i + 1)}
	}
	return out
}

// LoginLink makes a one-time login link for a web user at base (see
// LinkBase) and says until when it works.
func (a *App) LoginLink(ctx context.Context, base, user string) (string, time.Time, error) {
	tok, exp, err := a.Server.sessions.NewLink(ctx, user)
	if err != nil {
		return "", time.Time{}, err
	}
	return base + web.LoginPath(tok), exp, nil
}

// AnyWebLogin reports whether any web user ever logged in.
func (a *App) AnyWebLogin(ctx context.Context) (bool, error) { return a.Server.sessions.AnyLogin(ctx) }

// notifySet compiles [[policy.notify]] for the decisions (nil: none).
func notifySet(cfg config.Config, norm policy.Normalizer) *policy.NotifySet {
	if len(cfg.Policy.Notify) == 0 {
		return nil
	}
	return policy.CompileNotify(norm, cfg.NotifyPatterns())
}

// notifyKey is the signing key of a webhook delivery: the secret of the
// pattern that queued it, or of any pattern with the same URL (the file
// may have changed since); nil when none is left.
func notifyKey(ns []config.Notify, pattern int, url string) []byte {
	if pattern >= 0 && pattern < len(ns) && ns[pattern].WebhookURL == url && ns[pattern].WebhookSecret != "" {
		return []byte(ns[pattern].WebhookSecret)
	}
	for _, n := range ns {
		if n.WebhookURL == url && n.WebhookSecret != "" {
			return []byte(n.WebhookSecret)
		}
	}
	return nil
}

// Close writes the decision log lines still buffered and releases the
// database.
func (a *App) Close() error {
	a.vaglio.Close()
	a.version.Close()
	a.Rules.Close()
	return a.DB.Close()
}

// cardsPerMinute is each agent's cards_per_minute, by id; an agent the
// config no longer names gets the default.
func cardsPerMinute(agents []config.Agent) func(string) int {
	per := make(map[string]int, len(agents))
	for _, a := range agents {
		per[a.ID] = a.CardsPerMinute
	}
	return func(agent string) int {
		if n, ok := per[agent]; ok {
			return n
		}
		return config.DefaultCardsPerMinute
	}
}

// stoppedOr is err, or nil when ctx ended first: a gateway stopped while
// it was still starting has stopped, not failed.
func stoppedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
