package gateway

import (
	"context"
	"net/http"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/internal/duration"
	"github.com/metnos/gateway/policy"
)

// Profile is the agent's decision profile: its configured one, or for a
// child token the token's narrowed profile (under the root agent's id, so
// rules scoped to the agent still apply).
func (a *Agent) Profile() policy.Profile {
	if a.Child != nil {
		p := a.Child.Profile.Profile(a.ID, a.Child.Label())
		p.Mode = a.Mode           // a child token runs in its agent's mode
		p.Workspace = a.Workspace // and works where its agent does
		p.Home = a.Home
		return p
	}
	return a.Agent.Profile()
}

// tokenID is the child token's id, "" for the agent's own token: audit
// rows written on a token's behalf carry it.
func (a *Agent) tokenID() string {
	if a.Child != nil {
		return a.Child.ID
	}
	return ""
}

// sees says whether the caller may read, wait on, stream or cancel req:
// an admin any; the agent's own token every request of the agent; a child
// token only its own requests and its descendants'.
func (s *Server) sees(ctx context.Context, a *Agent, req approvals.Request) (bool, error) {
	switch {
	case a.Admin:
		return true, nil
	case req.Agent != a.ID:
		return false, nil
	case a.Child == nil:
		return true, nil
	}
	return s.tokens.Covers(ctx, a.Child, req.TokenID)
}

// caller is the agent as the token store sees it: making, listing or
// revoking child tokens.
func (a *Agent) caller() policy.Caller {
	max := a.MaxChildren
	if max <= 0 {
		max = config.DefaultMaxChildren
	}
	if a.Child != nil {
		return policy.Caller{Agent: a.ID, Profile: a.Child.Profile, Token: a.Child, MaxChildren: max}
	}
	return policy.Caller{Agent: a.ID, Profile: policy.RootProfile(a.Autonomy, a.AllowCapabilities, a.DenyCapabilities),
		MaxChildren: max}
}

// childAgent authenticates a child token: the root agent it acts as (same
// principals, grants, rate bucket, callback key), never an admin, with the
// token's profile. nil when tok is no live child token. Every call reads
// the database, so a revoke anywhere refuses the token at once.
func (s *Server) childAgent(ctx context.Context, tok string) (*Agent, error) {
	if s.tokens == nil {
		return nil, nil
	}
	t, err := s.tokens.Authenticate(ctx, tok)
	if err != nil || t == nil {
		return nil, err
	}
	root := s.AgentByID(t.Agent)
	if root == nil {
		return nil, nil // its agent left the config: its tokens went with it
	}
	child := &Agent{Agent: root.Agent, Child: t}
	child.Admin = false // a sub-agent never decides, nor manages rules and grants
	return child, nil
}

// tokenBody is what POST /v1/tokens takes.
type tokenBody struct {
	TTL               string              `json:"ttl"`
	Autonomy          string              `json:"autonomy"`
	AllowCapabilities []string            `json:"allow_capabilities"`
	DenyCapabilities  []string            `json:"deny_capabilities"`
	Targets           map[string][]string `json:"targets"`
	MaxRequests       *int                `json:"max_requests"`
	Name              string              `json:"name"`
}

// childTokens is the rate bucket of an agent's child token creations.
const childTokens = "child tokens"

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	var b tokenBody
	if !decodeJSON(w, r, &b) {
		return
	}
	req := policy.TokenRequest{AllowCapabilities: b.AllowCapabilities, DenyCapabilities: b.DenyCapabilities,
		Targets: b.Targets, MaxRequests: b.MaxRequests, Name: b.Name}
	if b.TTL != "" {
		d, err := duration.Parse(b.TTL)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_ttl", "ttl: "+err.Error())
			return
		}
		req.TTL = d
	}
	if b.Autonomy != "" {
		l, err := policy.ParseLevel(b.Autonomy)
		if err != nil {
			s.errorResponse(w, r, &policy.FieldError{Field: "autonomy", Err: err})
			return
		}
		req.Autonomy = &l
	}
	by := "agent:" + a.ID
	if a.Child != nil {
		by += "/" + a.Child.ID
	}
	// Creations take from a bucket of the agent's rate of their own.
	// A refused creation is not given back: the bucket bounds the attempts.
	wait, ok := s.limiter.take(a, childTokens)
	if !ok {
		s.errorResponse(w, r, &rateLimitError{agent: a.ID, rate: a.Rate, capability: childTokens, wait: wait})
		return
	}
	nt, err := s.tokens.Create(r.Context(), a.caller(), req, by)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	s.log.Info("child token created", "agent", a.ID, "token_id", nt.ID, "narrowed", len(nt.Narrowed))
	writeJSON(w, http.StatusCreated, nt)
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	list, err := s.tokens.Children(r.Context(), agentFrom(r).caller())
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": list})
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	a := agentFrom(r)
	id := r.PathValue("id")
	by := "agent:" + a.ID
	if a.Child != nil {
		by += "/" + a.Child.ID
	}
	n, err := s.tokens.Revoke(r.Context(), a.caller(), a.Admin, id, by)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	s.log.Info("child token revoked", "agent", a.ID, "token_id", id, "revoked", n)
	writeJSON(w, http.StatusOK, map[string]any{"revoked": n > 0, "tokens": n})
}
