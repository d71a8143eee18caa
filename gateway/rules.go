package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/metnos/gateway/config"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// ruleBody is what POST /v1/policy/rules takes.
type ruleBody = replay.RuleBody

// rulePatchBody is what PATCH /v1/policy/rules/{id} takes: the action,
// the target, the scope, the position; absent fields stay as they are.
type rulePatchBody struct {
	Target   *string         `json:"target"`
	Action   *string         `json:"action"`
	SenderID *string         `json:"sender_id"`
	Agent    *string         `json:"agent"`
	Channel  *string         `json:"channel"`
	Position json.RawMessage `json:"position"`
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request) {
	list, err := s.rules.List(r.Context())
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"rules": list})
}

func (s *Server) addRule(w http.ResponseWriter, r *http.Request) {
	var b ruleBody
	if !decodeJSON(w, r, &b) {
		return
	}
	pos, err := policy.ParsePositionJSON(b.Position)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	if policy.Action(b.Action) == policy.ActionApprove && s.cfg.Web.PolicyPasskey() {
		s.errorResponse(w, r, errPolicyStepUp)
		return
	}
	ri, err := s.rules.Add(r.Context(), policy.NewRule{Capability: b.Capability, Target: b.Target,
		Action: policy.Action(b.Action), SenderID: b.SenderID, Agent: b.Agent, Channel: b.Channel, Position: pos},
		"api:"+agentFrom(r).ID)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	s.log.Info("rule added", "rule_id", ri.ID, "agent", agentFrom(r).ID)
	writeJSON(w, http.StatusCreated, s.ruleAnswer(ri))
}

func (s *Server) updateRule(w http.ResponseWriter, r *http.Request) {
	var b rulePatchBody
	if !decodeJSON(w, r, &b) {
		return
	}
	p := policy.RulePatch{Target: b.Target, SenderID: b.SenderID, Agent: b.Agent, Channel: b.Channel}
	if b.Action != nil {
		a := policy.Action(*b.Action)
		p.Action = &a
		if a == policy.ActionApprove && s.cfg.Web.PolicyPasskey() {
			s.errorResponse(w, r, errPolicyStepUp)
			return
		}
	}
	if len(b.Position) > 0 && string(b.Position) != "null" { // null, like an absent field, leaves it where it is
		pos, err := policy.ParsePositionJSON(b.Position)
		if err != nil {
			s.errorResponse(w, r, err)
			return
		}
		p.Position = &pos
	}
	ri, err := s.rules.Update(r.Context(), r.PathValue("id"), p, "api:"+agentFrom(r).ID)
	if err != nil {
		s.errorResponse(w, r, err)
		return
	}
	s.log.Info("rule changed", "rule_id", ri.ID, "agent", agentFrom(r).ID)
	writeJSON(w, http.StatusOK, s.ruleAnswer(ri))
}

func (s *Server) removeRule(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := s.rules.Remove(r.Context(), id, "api:"+agentFrom(r).ID); err != nil {
		s.errorResponse(w, r, err)
		return
	}
	s.log.Info("rule removed", "rule_id", id, "agent", agentFrom(r).ID)
	writeJSON(w, http.StatusOK, map[string]bool{"removed": true})
}

// ruleAnswer is a rule as the API answers an add or a change: with the
// guarded routes it cannot lift, if any ("does not apply to requests on
// route 2: quorum 2, passkey").
type ruleAnswer struct {
	policy.RuleInfo
	Warnings []string `json:"warnings,omitempty"`
}

func (s *Server) ruleAnswer(ri policy.RuleInfo) ruleAnswer {
	return ruleAnswer{RuleInfo: ri, Warnings: config.NotLifted(s.cfg.RuleGuards(ri.Rule()))}
}
