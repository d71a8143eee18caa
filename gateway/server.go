// Package gateway is the running gateway: the HTTP server (agent API,
// admin API, web page, messenger endpoints), the wiring of every other
// package. The messenger adapters live under messenger/ and plug in
// through messenger.Factory.
package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metnos/gateway/hooks"
	"github.com/metnos/gateway/internal/callbackurl"
	"github.com/metnos/gateway/internal/httpjson"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/sessions"
	"github.com/metnos/gateway/telemetry"
	"github.com/metnos/gateway/web"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/mcpproxy"
	"github.com/metnos/gateway/mcpserver"
	"github.com/metnos/gateway/policy"
)

// MaxBodyBytes is the largest request body accepted anywhere (SPEC §7).
const MaxBodyBytes = httpjson.MaxBodyBytes

// MaxWait bounds ?wait= on long-polls; past it a client polls again.
const MaxWait = 5 * time.Minute

// Agent is a configured agent as the server sees it.
type Agent struct {
	config.Agent
	tokenHash [32]byte
	// Child is the child token the call came with; nil for the agent's own
	// token. The agent is then its root agent, never an admin.
	Child *policy.Token
}

// Server serves the HTTP API and the web page.
type Server struct {
	cfg      config.Config
	svc      *approvals.Service
	tel      *telemetry.Provider // nil: telemetry off
	grants   *policy.GrantStore
	decider  *policy.Decider
	rules    *policy.RuleStore
	tokens   *policy.TokenStore
	agents   []*Agent
	limiter  *limiter
	streams  *slots          // each agent's open SSE streams and long-polls
	sessions *sessions.Store // the web page's logins
	passkeys *passkeys.Store // the web users' passkeys and their challenges
	// bodyTimeout bounds how long a request's body may take (BodyTimeout).
	bodyTimeout  time.Duration
	metrics      *Metrics
	log          *slog.Logger
	now          func() time.Time
	page         *web.Page
	mux          *http.ServeMux // the routes, built by Handler
	extra        []route
	shutdown     chan struct{} // closed when the server begins shutting down (ends SSE streams)
	leader       atomic.Bool   // this replica runs the leader's work (see App.lead)
	mcp          *mcp.Server   // the MCP tools at /mcp (set by routes)
	mcpCalls     sync.WaitGroup
	mcpProxies   []*mcp.Server      // the proxies at /mcp/{name} (set by routes)
	mcpUpstreams []*mcpproxy.Shared // the servers they stand in front of
	recheck      time.Duration      // how often open connections of child tokens read theirs again (tokenRecheck)
	pairs        hookPairs          // the first events of hook pairs (hook_pairs.go)
	push         *web.Push          // Web Push (web.NewPush); nil: none
}

type route struct {
	pattern string
	handler http.Handler
}

// Options are the server's collaborators.
type Options struct {
	Service *approvals.Service
	Decider *policy.Decider    // for /v1/check (dry runs); the service has its own
	Rules   *policy.RuleStore  // the run-time rules; nil: only the config's, read-only
	Tokens  *policy.TokenStore // child tokens; nil: none
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
	// BodyTimeout bounds how long a request's body may take; 0: BodyTimeout.
	BodyTimeout time.Duration
	// Telemetry traces agents' requests (nil: off).
	Telemetry *telemetry.Provider
}

// NewServer builds a server from a validated config.
func NewServer(cfg config.Config, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = BodyTimeout
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	s := &Server{
		cfg: cfg, svc: o.Service, grants: o.Service.Grants(), decider: o.Decider, rules: o.Rules, tokens: o.Tokens, metrics: o.Metrics,
		log: o.Logger, now: o.Now, limiter: newLimiter(o.Now), streams: newSlots(), sessions: sessions.New(o.Service.DB(), o.Now, func(name string) bool { return web.WebUserExists(cfg, name) }), passkeys: passkeys.New(o.Service.DB(), o.Now), bodyTimeout: o.BodyTimeout, shutdown: make(chan struct{}), recheck: tokenRecheck,
	}
	s.tel = o.Telemetry
	for _, a := range cfg.Agents {
		s.agents = append(s.agents, &Agent{Agent: a, tokenHash: sha256.Sum256([]byte(a.Token))})
	}
	s.metrics.watch(o.Service)
	s.metrics.watchStorage(o.Service.DB())
	s.metrics.watchTelemetry(o.Telemetry)
	s.page = web.New(web.Options{Config: cfg, Service: o.Service, Rules: o.Rules, Sessions: s.sessions, Passkeys: s.passkeys,
		Gateway: s, Logger: o.Logger, Now: o.Now, Shutdown: s.shutdown})
	return s
}

// Handle mounts an extra handler (a messenger's webhook) on the server's mux.
// Call before Handler.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.extra = append(s.extra, route{pattern, h})
}

// AgentByToken finds the agent whose token is tok. Every configured token
// is compared, in constant time, so timing tells nothing about which
// agents exist or how much of a token matched.
func (s *Server) AgentByToken(tok string) *Agent {
	if tok == "" {
		return nil
	}
	h := sha256.Sum256([]byte(tok))
	var found *Agent
	for _, a := range s.agents {
		if subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1 {
			found = a
		}
	}
	return found
}

// AgentByID finds a configured agent.
func (s *Server) AgentByID(id string) *Agent {
	for _, a := range s.agents {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// Rules returns the rule store (the file's rules and those added at run
// time), for the messengers' commands; nil when the server has none.
func (s *Server) Rules() *policy.RuleStore { return s.rules }

// CallbackKey is the HMAC key of an agent's callbacks: its token.
func (s *Server) CallbackKey(agent string) []byte {
	if a := s.AgentByID(agent); a != nil {
		return []byte(a.Token)
	}
	return nil
}

// CallbackAllowed checks a callback URL against the agent's
// agents[].callbacks; an agent no longer configured may have none.
func (s *Server) CallbackAllowed(agent, url string) (callbackurl.Allowed, error) {
	a := s.AgentByID(agent)
	if a == nil {
		return callbackurl.Allowed{}, fmt.Errorf("agent %s is not configured", agent)
	}
	return callbackurl.Check(a.Callbacks, url)
}

// Shutdown ends long-lived streams so http.Server.Shutdown can finish.
func (s *Server) Shutdown() {
	select {
	case <-s.shutdown:
	default:
		close(s.shutdown)
		if s.mcp != nil {
			mcpserver.Close(s.mcp) // ends the MCP sessions' open streams
		}
		s.closeMCPProxies()
	}
}

// Handler returns the whole HTTP surface with its middleware.
func (s *Server) Handler() http.Handler {
	s.mux = s.routes()
	return s.bodyDeadline(s.recoverPanics(s.logRequests(s.mux)))
}

// Route returns the pattern of the route that serves method and path, or
// "" when none does (the docs test holds every route the docs name to it).
// It builds the routes as Handler does when Handler has not run.
func (s *Server) Route(method, path string) string {
	if s.mux == nil {
		s.Handler()
	}
	r, err := http.NewRequest(method, path, nil)
	if err != nil {
		return ""
	}
	_, pattern := s.mux.Handler(r)
	return pattern
}

// routes lists every route of the gateway, top to bottom.
func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	agent, admin := s.requireAgent, s.requireAdmin

	mux.Handle("POST /v1/requests", agent(s.createRequest))
	mux.Handle("GET /v1/requests/{id}", agent(s.getRequest))
	mux.Handle("DELETE /v1/requests/{id}", agent(s.cancelRequest))
	mux.Handle("POST /v1/requests/{id}/decision", admin(s.decideRequest))
	mux.Handle("GET /v1/requests", admin(s.listPending))
	mux.Handle("POST /v1/check", agent(s.check))
	mux.Handle("GET /v1/capabilities", agent(s.capabilities))
	mux.Handle("POST /v1/tokens", agent(s.createToken))
	mux.Handle("GET /v1/tokens", agent(s.listTokens))
	mux.Handle("DELETE /v1/tokens/{id}", agent(s.revokeToken))
	mux.Handle("GET /v1/events", agent(s.events))
	mux.Handle("GET /v1/grants", agent(s.listGrants))
	mux.Handle("POST /v1/grants", admin(s.addGrant))
	mux.Handle("DELETE /v1/grants/{id}", admin(s.revokeGrant))
	mux.Handle("GET /v1/policy/rules", admin(s.listRules))
	mux.Handle("POST /v1/policy/rules", admin(s.addRule))
	mux.Handle("PATCH /v1/policy/rules/{id}", admin(s.updateRule))
	mux.Handle("DELETE /v1/policy/rules/{id}", admin(s.removeRule))
	mux.Handle("POST /v1/policy/simulate", admin(s.simulate))
	mux.Handle("GET /v1/policy/suggestions", admin(s.suggestions))
	mux.Handle("GET /v1/audit", admin(s.listAudit))
	mux.HandleFunc("GET /v1/policy/registry", s.registry)
	mux.HandleFunc("GET /v1/policy/table", s.table)
	for _, ad := range hooks.Adapters() {
		mux.Handle("POST /v1/hooks/"+ad.Name, s.hookSafe(ad, agent(s.agentHook(ad))))
	}
	mux.Handle("/mcp", s.mcpHandler(s.recoverPanics(mux))) // MCP streamable HTTP (GET, POST, DELETE); agent token
	mux.Handle("GET /v1/mcp/servers/{name}", agent(s.mcpServerMap))
	mux.Handle("/mcp/{name}", s.mcpProxyHandler(s.recoverPanics(mux))) // the MCP proxy of [[mcp.servers]]; agent token

	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.Handler())

	s.page.Routes(mux)
	for _, r := range s.extra {
		mux.Handle(r.pattern, r.handler)
	}
	return mux
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	began := time.Now()
	if err := s.svc.DB().Ready(ctx); err != nil {
		if !s.svc.DB().Outage.Failed(s.log, "readyz", began, err) {
			s.log.Error("readyz: database unreachable", "err", err)
		}
		writeError(w, http.StatusServiceUnavailable, "not_ready", "database unreachable")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "leader": s.leader.Load()})
}

// SetLeader records whether this replica leads (see App.lead): in
// /readyz, and as the gauge gateway_leader.
func (s *Server) SetLeader(leader bool) {
	s.leader.Store(leader)
	s.metrics.setLeader(leader)
}

func (s *Server) registry(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, policy.Registry())
}

func (s *Server) table(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, policy.Table())
}
