package web

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"

	"github.com/metnos/gateway/approvals"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
)

// ruleRow is one rule as the web page lists it, with where it comes from.
type ruleRow struct {
	policy.RuleInfo
	DOMID string // "rule-api-3": the id with characters HTML ids dislike replaced
	Scope string // "agent metnos · sender roberto", empty for an org rule
}

// ruleCapabilities are the choices of the add form's capability: "*",
// each prefix ("fs:*"), then each capability.
func ruleCapabilities() []string {
	out := []string{"*"}
	seen := map[string]bool{}
	for _, c := range policy.Registry() {
		pre, _, _ := strings.Cut(c.Name, ":")
		if !seen[pre] {
			seen[pre] = true
			out = append(out, pre+":*")
		}
	}
	for _, c := range policy.Registry() {
		out = append(out, c.Name)
	}
	return out
}

// loadRules fills the page's rules and adds them to its fingerprint.
func (w *web) loadRules(ctx context.Context, d *pageData, h hash.Hash) error {
	d.RuleCapabilities = ruleCapabilities()
	if w.s.rules == nil {
		return nil
	}
	list, err := w.s.rules.List(ctx)
	if err != nil {
		return fmt.Errorf("web page: list rules: %w", err)
	}
	for _, ri := range list {
		var scope []string
		for _, kv := range [][2]string{{w.loc.T("rules.agent"), ri.Agent}, {w.loc.T("rules.channel"), ri.Channel},
			{w.loc.T("rules.sender"), ri.SenderID}} {
			if kv[1] != "" {
				scope = append(scope, kv[0]+" "+cards.SafeIn(kv[1], w.loc))
			}
		}
		fmt.Fprintf(h, "u%s%d%s%s;", ri.ID, ri.Position, ri.Action, ri.Target)
		// A rule may come from an admin agent over the API: its target and
		// scope are shown as the cards show agent text (no hidden characters).
		ri.Target, ri.CreatedBy = cards.SafeIn(ri.Target, w.loc), cards.SafeIn(ri.CreatedBy, w.loc)
		d.Rules = append(d.Rules, ruleRow{RuleInfo: ri, DOMID: "rule-" + strings.ReplaceAll(ri.ID, ":", "-"),
			Scope: strings.Join(scope, " · ")})
	}
	return nil
}

// webActor names who acted on the page, "web:<user>", for created_by,
// revoked_by and the audit trail.
func (w *web) webActor(r *http.Request) string { return "web:" + sessionOf(r).User }

// actor is the signed-in web user as an approver: decided_by and the
// approvals read "web:<user>", and quorum counts each user once.
func (w *web) actor(r *http.Request) approvals.Actor {
	u := sessionOf(r).User
	return approvals.Actor{Channel: approvals.ChannelWeb, ID: u, Name: u}
}

// isAdmin reports whether the signed-in web user is an admin ([[web.users]]
// role; by default the first user).
func (w *web) isAdmin(r *http.Request) bool {
	u := sessionOf(r).User
	return w.s.cfg.Web.IsAdmin(u) || len(w.s.cfg.Web.Users) == 0 && u == DefaultWebUser(w.s.cfg)
}

// adminOnly lets only admins through: an approver decides requests, and
// never adds, changes or removes rules and grants.
func (w *web) adminOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !w.isAdmin(r) {
			w.s.log.Warn("web policy change refused: not an admin", "path", r.URL.Path, "by", w.webActor(r))
			w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.admin_only", cards.SafeIn(sessionOf(r).User, w.loc))})
			return
		}
		h.ServeHTTP(rw, r)
	})
}

// notLifted is what the page adds to a rule's flash: the guarded routes
// it cannot lift (" It does not apply to requests on route 2: …").
func (w *web) notLifted(guards []*policy.Guard) string {
	var out string
	for _, g := range guards {
		out += " " + w.loc.T("web.not_lifted", g.Label)
	}
	return out
}

// ruleForm is the rule the page's add form (or a suggestion's) names.
func ruleForm(r *http.Request) (policy.NewRule, error) {
	pos, err := policy.ParsePosition(r.PostFormValue("position"))
	return policy.NewRule{
		Capability: r.PostFormValue("capability"), Target: strings.TrimSpace(r.PostFormValue("target")),
		Action: policy.Action(r.PostFormValue("action")), SenderID: strings.TrimSpace(r.PostFormValue("sender_id")),
		Agent: strings.TrimSpace(r.PostFormValue("agent")), Channel: strings.TrimSpace(r.PostFormValue("channel")),
		Position: pos,
	}, err
}

// addRule is POST /web/rules/add: the page's add form (admins only).
func (w *web) addRule(rw http.ResponseWriter, r *http.Request) {
	nr, err := ruleForm(r)
	w.applyAddRule(rw, r, nr, err)
}

// applyAddRule adds nr (unless err, the form's, says it is not a rule)
// and says so: a tap's, or one signed with a passkey (nr.Signed).
func (w *web) applyAddRule(rw http.ResponseWriter, r *http.Request, nr policy.NewRule, err error) {
	if err == nil {
		var ri policy.RuleInfo
		ri, err = w.s.rules.Add(r.Context(), nr, w.webActor(r))
		if err == nil {
			w.s.log.Info("rule added", "rule_id", ri.ID, "by", w.webActor(r))
			w.redirect(rw, r, flash{Text: w.loc.T("web.rule_added",
				ri.ID, ri.Action, ri.Capability, cards.SafeIn(ri.Target, w.loc), ri.Owner, ri.Position) +
				w.notLifted(w.s.cfg.RuleGuards(ri.Rule()))})
			return
		}
	}
	var fe *policy.FieldError
	if errors.As(err, &fe) {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.rule_not_added", cards.SafeIn(fe.Error(), w.loc))})
		return
	}
	w.s.log.Error("web add rule failed", "err", err)
	w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.rule_add_failed")})
}

// removeRule is POST /web/rules/remove: the Remove button of a run-time rule.
func (w *web) removeRule(rw http.ResponseWriter, r *http.Request) {
	w.applyRemoveRule(rw, r, r.PostFormValue("id"), nil)
}

// applyRemoveRule removes rule id, its audit row carrying signed (a
// passkey's assertion) when set, and says so.
func (w *web) applyRemoveRule(rw http.ResponseWriter, r *http.Request, id string, signed map[string]any) {
	err := w.s.rules.RemoveSigned(r.Context(), id, w.webActor(r), signed)
	var fe *policy.FieldError
	switch {
	case err == nil:
		w.s.log.Info("rule removed", "rule_id", id, "by", w.webActor(r))
		w.redirect(rw, r, flash{Text: w.loc.T("web.rule_removed", cards.SafeIn(id, w.loc))})
	case errors.Is(err, policy.ErrRuleFromConfig):
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.rule_from_config", cards.SafeIn(id, w.loc))})
	case errors.Is(err, policy.ErrNotFound), errors.As(err, &fe):
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.rule_not_found", cards.SafeIn(id, w.loc))})
	default:
		w.s.log.Error("web remove rule failed", "rule_id", id, "err", err)
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.rule_remove_failed")})
	}
}
