package web

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
	"github.com/metnos/gateway/sessions"
)

// Gateway is what the page asks of the gateway around it: the policy
// replayed and suggested over the stored window (package replay, under
// the policy as it stands).
type Gateway interface {
	Simulate(ctx context.Context, b replay.Body) (replay.Result, error)
	Suggest(ctx context.Context, window time.Duration, minCount int) ([]replay.Suggestion, error)
}

// Options are the page's parts, the gateway's own.
type Options struct {
	Config   config.Config
	Service  *approvals.Service
	Rules    *policy.RuleStore // the run-time rules; nil: only the config's, read-only
	Sessions *sessions.Store
	Passkeys *passkeys.Store
	Gateway  Gateway
	Logger   *slog.Logger
	Now      func() time.Time
	// Shutdown is closed when the gateway begins shutting down: the
	// page's background work ends.
	Shutdown <-chan struct{}
}

// server is the page's view of the gateway: what its handlers read.
type server struct {
	cfg      config.Config
	svc      *approvals.Service
	grants   *policy.GrantStore
	rules    *policy.RuleStore
	sessions *sessions.Store
	passkeys *passkeys.Store
	push     *Push // nil: no Web Push
	gw       Gateway
	log      *slog.Logger
	now      func() time.Time
	shutdown <-chan struct{}
	suggest  *suggester
}

func (s *server) Simulate(ctx context.Context, b replay.Body) (replay.Result, error) {
	return s.gw.Simulate(ctx, b)
}

func (s *server) Suggest(ctx context.Context, window time.Duration, minCount int) ([]replay.Suggestion, error) {
	return s.gw.Suggest(ctx, window, minCount)
}

// untilShutdown is parent, also ended when the gateway shuts down.
func (s *server) untilShutdown(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-s.shutdown:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// Page is the owner's web page (SPEC §8 "Web page"), its Web Push and its
// installable app: New builds it, Routes mounts it on the gateway's mux.
type Page struct{ w *web }

// New builds the page.
func New(o Options) *Page {
	s := &server{cfg: o.Config, svc: o.Service, grants: o.Service.Grants(), rules: o.Rules, sessions: o.Sessions,
		passkeys: o.Passkeys, gw: o.Gateway, log: o.Logger, now: o.Now, shutdown: o.Shutdown}
	s.suggest = newSuggester(s)
	return &Page{w: newWeb(s)}
}

// SetPush gives the page its Web Push, before it serves.
func (p *Page) SetPush(push *Push) { p.w.s.push = push }

// Routes mounts the page, its Web Push endpoints and its app's files.
func (p *Page) Routes(mux *http.ServeMux) {
	p.w.routes(mux)
	p.w.batchRoutes(mux)
	p.w.pushRoutes(mux)
	p.w.pwaRoutes(mux)
}

// Locale is the page's language, zone and clock.
func (p *Page) Locale() locale.Locale { return p.w.loc }

// RefreshSuggestions computes the page's suggestions now, over every
// request committed before the call, and waits for them: what the next
// page load shows.
func (p *Page) RefreshSuggestions(ctx context.Context) error {
	_, err := p.w.s.suggest.fresh(ctx)
	return err
}
