package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// POST /v1/policy/simulate and GET /v1/policy/suggestions: the window's
// stored requests handed to package replay, with the policy as it stands.

func (s *Server) simulate(w http.ResponseWriter, r *http.Request) {
	var b replay.Body
	if !decodeJSON(w, r, &b) {
		return
	}
	res, err := s.Simulate(r.Context(), b)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// Simulate is replay.Simulate over the window b.Since names, under the
// policy as it stands now.
func (s *Server) Simulate(ctx context.Context, b replay.Body) (replay.Result, error) {
	window, err := replay.ParseSince(b.Since)
	if err != nil {
		return replay.Result{}, err
	}
	rules, err := s.rules.Rules(ctx)
	if err != nil {
		return replay.Result{}, err
	}
	reqs, err := s.svc.Window(ctx, s.now().Add(-window), replay.MaxRequests)
	if err != nil {
		return replay.Result{}, err
	}
	return replay.Simulate(ctx, replay.Policy{Rules: rules, Grants: s.decider.Grants, Norm: s.decider.Norm,
		JudgeThreshold: s.cfg.Vaglio.JudgeThreshold, Agents: s.cfg.Agents}, reqs, b)
}

func (s *Server) suggestions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	window, err := replay.ParseSince(q.Get("since"))
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	minCount := 3
	if v := q.Get("min"); v != "" {
		if minCount, err = strconv.Atoi(v); err != nil || minCount < 1 {
			s.errorResponse(w, r, &policy.FieldError{Field: "min", Err: errInvalidMin})
			return
		}
	}
	out, err := s.Suggest(r.Context(), window, minCount)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"suggestions": out})
}

var errInvalidMin = errors.New("want a whole number, 1 or more")

// Suggest is replay.Suggest over the window's requests.
func (s *Server) Suggest(ctx context.Context, window time.Duration, minCount int) ([]replay.Suggestion, error) {
	reqs, err := s.svc.Window(ctx, s.now().Add(-window), replay.MaxRequests)
	if err != nil {
		return nil, err
	}
	return replay.Suggest(s.decider.Norm, reqs, minCount), nil
}

// RefreshSuggestions computes the web page's suggestions now, over every
// request committed before the call, and waits for them: what the next
// page load shows.
func (s *Server) RefreshSuggestions(ctx context.Context) error { return s.page.RefreshSuggestions(ctx) }
