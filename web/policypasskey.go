package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/passkeys"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// With [web] policy_step_up = "passkey", every change of rules and grants
// on the page (add, remove, revoke) is an admin's passkey assertion over
// the change (passkeys.PolicyChange): a begin that answers the options
// with the replay of the change, which the page shows before the
// authenticator is asked, then the assertion, which makes the change with
// the signature in its audit row.

// errPolicyChange: the form names no change the page can sign.
var errPolicyChange = errors.New("not a rule or grant change")

// policyTap refuses the plain (tap) form of a rule or grant change when
// changes need a passkey: the page posts them through policyBegin and
// policySigned instead.
func (w *web) policyTap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if w.s.cfg.Web.PolicyPasskey() {
			w.s.log.Warn("web policy change refused: it needs a passkey", "path", r.URL.Path, "by", w.webActor(r))
			w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.policy_passkey_needed")})
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// policyChange reads the change a form names, with the replay of its
// effect the page shows before the passkey signs it.
func (w *web) policyChange(r *http.Request) (passkeys.PolicyChange, error) {
	ctx := r.Context()
	c := passkeys.PolicyChange{Change: r.PostFormValue("change"), By: sessionOf(r).User}
	switch c.Change {
	case passkeys.ChangeAddRule:
		nr, err := ruleForm(r)
		if err != nil {
			return c, err
		}
		c.Fields = map[string]string{"capability": nr.Capability, "target": nr.Target, "action": string(nr.Action),
			"agent": nr.Agent, "channel": nr.Channel, "sender_id": nr.SenderID, "position": r.PostFormValue("position")}
		res, err := w.s.Simulate(ctx, replay.Body{Since: "7d", AddRules: []replay.RuleBody{{Capability: nr.Capability,
			Target: nr.Target, Action: string(nr.Action), SenderID: nr.SenderID, Agent: nr.Agent, Channel: nr.Channel}}})
		if err != nil {
			return c, err
		}
		c.Replay = w.loc.T("web.replay_summary", len(res.Changed), res.Total) +
			w.notLifted(w.s.cfg.RuleGuards(policy.Rule{Capability: nr.Capability, Action: nr.Action, Agent: nr.Agent}))
	case passkeys.ChangeRemoveRule:
		ri, err := w.s.rules.Get(ctx, r.PostFormValue("id"))
		if err != nil {
			return c, err
		}
		if ri.Source != "api" {
			return c, fmt.Errorf("%w: rule %s", policy.ErrRuleFromConfig, ri.ID)
		}
		c.Fields = map[string]string{"rule_id": ri.ID, "capability": ri.Capability, "target": ri.Target,
			"action": string(ri.Action), "agent": ri.Agent, "channel": ri.Channel, "sender_id": ri.SenderID}
		res, err := w.s.Simulate(ctx, replay.Body{Since: "7d", RemoveRules: []string{ri.ID}})
		if err != nil {
			return c, err
		}
		c.Replay = w.loc.T("web.replay_summary", len(res.Changed), res.Total)
	case passkeys.ChangeRevokeGrant:
		id, err := strconv.ParseInt(r.PostFormValue("id"), 10, 64)
		if err != nil || id <= 0 {
			return c, fmt.Errorf("%w: grant id %q", errPolicyChange, r.PostFormValue("id"))
		}
		g, err := w.s.grants.Get(ctx, id)
		if err != nil {
			return c, err
		}
		c.Fields = map[string]string{"grant_id": strconv.FormatInt(g.ID, 10), "capability": g.Capability,
			"target": g.Target, "channel": g.Channel, "sender_id": g.SenderID, "agent": g.Agent}
		c.Replay = w.loc.T("web.replay_revoke", g.ID, g.Capability, cards.SafeIn(g.Target, w.loc), g.Channel+"/"+g.SenderID)
	default:
		return c, fmt.Errorf("%w: %q", errPolicyChange, c.Change)
	}
	return c, nil
}

// policyBegin is POST /web/policy/passkey/begin: a rule or grant change
// from the page. It answers the passkey options, whose challenge commits
// to the change, and the replay the page shows before asking for the
// passkey.
func (w *web) policyBegin(rw http.ResponseWriter, r *http.Request) {
	rw.Header().Set("Cache-Control", "no-store")
	if !w.s.cfg.Web.PolicyPasskey() {
		writeJSON(rw, http.StatusBadRequest, map[string]string{"error": w.loc.T("web.policy_passkey_off")})
		return
	}
	c, err := w.policyChange(r)
	var fe *policy.FieldError
	switch {
	case errors.As(err, &fe):
		writeJSON(rw, http.StatusBadRequest, map[string]string{"error": cards.SafeIn(fe.Error(), w.loc)})
		return
	case errors.Is(err, errPolicyChange), errors.Is(err, policy.ErrNotFound), errors.Is(err, policy.ErrRuleFromConfig):
		writeJSON(rw, http.StatusBadRequest, map[string]string{"error": cleanMsg(err)})
		return
	case err != nil:
		w.s.log.Error("web policy change", "err", err)
		writeJSON(rw, http.StatusInternalServerError, map[string]string{"error": w.loc.T("web.failed")})
		return
	}
	rp, err := w.rp(r)
	if err != nil {
		w.beginJSON(rw, passkeys.Begun{}, err)
		return
	}
	content := c.JSON()
	b, err := w.s.passkeys.BeginStepUp(r.Context(), rp, c.By, "", string(content), content)
	if err != nil {
		w.beginJSON(rw, b, err)
		return
	}
	writeJSON(rw, http.StatusOK, map[string]any{"ceremony": b.Ceremony, "options": b.Options, "replay": c.Replay})
}

// policySigned is POST /web/policy/passkey: the assertion over a change.
// The change is the one the challenge was made for (stored with it, never
// read from this form), made only when the assertion verifies against one
// of the signed-in admin's passkeys, with the signature in its audit row.
func (w *web) policySigned(rw http.ResponseWriter, r *http.Request) {
	rp, err := w.rp(r)
	if err != nil {
		w.redirect(rw, r, flash{Error: true, Text: err.Error()})
		return
	}
	user := sessionOf(r).User
	proof, _, content, err := w.s.passkeys.FinishStepUp(r.Context(), rp, user, r.PostFormValue("ceremony"),
		[]byte(r.PostFormValue("credential")))
	if err != nil {
		w.s.log.Warn("passkey policy change refused", "user", user, "err", err)
		w.redirect(rw, r, w.decideFailure(err))
		return
	}
	c, ok := passkeys.ParsePolicyChange([]byte(content))
	if !ok || c.By != user {
		w.fail(rw, r, fmt.Errorf("%w: the signed content is not a change of %s", errPolicyChange, user))
		return
	}
	signed, f := proof.AuditDetail(), c.Fields
	switch c.Change {
	case passkeys.ChangeAddRule:
		pos, err := policy.ParsePosition(f["position"])
		w.applyAddRule(rw, r, policy.NewRule{Capability: f["capability"], Target: f["target"], Action: policy.Action(f["action"]),
			SenderID: f["sender_id"], Agent: f["agent"], Channel: f["channel"], Position: pos, Signed: signed}, err)
	case passkeys.ChangeRemoveRule:
		w.applyRemoveRule(rw, r, f["rule_id"], signed)
	case passkeys.ChangeRevokeGrant:
		id, _ := strconv.ParseInt(f["grant_id"], 10, 64)
		w.applyRevoke(rw, r, id, signed)
	default:
		w.fail(rw, r, fmt.Errorf("%w: %q", errPolicyChange, c.Change))
	}
}
