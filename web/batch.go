package web

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
)

// batchRoutes mounts Several at once: Allow selected / Deny selected
// (a confirmation page) and Confirm (the decisions).
func (w *web) batchRoutes(mux *http.ServeMux) {
	type hf = http.HandlerFunc
	mux.Handle("POST /web/batch", w.access(w.csrf(hf(w.batch))))
	mux.Handle("POST /web/batch/decide", w.access(w.csrf(hf(w.batchDecide))))
}

// webMaxBatch bounds the requests one batch decision names.
const webMaxBatch = 100

// batchRow is one pending request the page's Several at once section
// offers: one that needs no step-up and one allow, which the signed-in
// user may decide. Title and Target went through the cards' escaping.
type batchRow struct {
	ID, Title, Target string
}

// batchable says why r cannot be decided in a batch by by ("" when it
// can): only a pending request whose route asks for no step-up and a
// quorum of one, that by may decide.
func (w *web) batchable(ctx context.Context, r approvals.Request, by approvals.Actor) string {
	switch {
	case r.Status != approvals.StatusPending:
		return w.loc.T("web.batch_not_pending")
	case r.StepUp != "":
		return w.loc.T("web.batch_step_up")
	case r.Quorum > 1:
		return w.loc.T("web.batch_quorum")
	}
	if err := w.s.svc.MayDecide(ctx, r, by); err != nil {
		return w.loc.T("web.batch_not_approver")
	}
	return ""
}

func (w *web) batchRow(r approvals.Request) batchRow {
	target, _ := cards.CutIn(cards.SafeIn(r.Target, w.loc), 200, w.loc)
	return batchRow{ID: r.ID, Title: cards.SafeIn(w.loc.T("card.title", r.Agent, r.Capability), w.loc), Target: target}
}

// batchRows are the pending requests the page offers for a batch; a
// failure offers none (it is logged): the cards are still there.
func (w *web) batchRows(ctx context.Context, by approvals.Actor) []batchRow {
	pending, err := w.s.svc.ListPending(ctx, webMaxPending)
	if err != nil {
		w.s.log.Error("web page: batch rows", "err", err)
		return nil
	}
	var out []batchRow
	for _, r := range pending {
		if w.batchable(ctx, r, by) == "" {
			out = append(out, w.batchRow(r))
		}
	}
	return out
}

// batchDecision reads the form's decision: Allow once or Deny only.
func batchDecision(s string) (approvals.Decision, bool) {
	switch approvals.Decision(s) {
	case approvals.AllowOnce:
		return approvals.AllowOnce, true
	case approvals.Deny:
		return approvals.Deny, true
	}
	return "", false
}

// batchIDs reads the ids a form names, each once, in order.
func batchIDs(r *http.Request) []string {
	var out []string
	seen := map[string]bool{}
	for _, id := range r.PostForm["id"] {
		if id = strings.TrimSpace(id); id != "" && !seen[id] && len(out) < webMaxBatch {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// batchConfirm is the data of the confirmation page: exactly the requests
// that will be decided, with their ids, and those that will not.
type batchConfirm struct {
	CSRF     string
	Decision approvals.Decision
	Verb     string
	Rows     []batchRow
	Skipped  []batchSkip
}

type batchSkip struct {
	ID, Why string
}

// batch is POST /web/batch: Allow selected or Deny selected. Nothing is
// decided yet: the page that answers lists exactly the requests (by id)
// that Confirm will decide, and those it will not.
func (w *web) batch(rw http.ResponseWriter, r *http.Request) {
	d, ok := batchDecision(r.PostFormValue("decision"))
	ids := batchIDs(r)
	if !ok || len(ids) == 0 {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.batch_none")})
		return
	}
	by := w.actor(r)
	c := batchConfirm{CSRF: sessionOf(r).CSRF, Decision: d, Verb: w.batchVerb(d)}
	for _, id := range ids {
		req, err := w.s.svc.Get(r.Context(), id)
		if err != nil {
			c.Skipped = append(c.Skipped, batchSkip{ID: cards.SafeIn(id, w.loc), Why: w.loc.T("web.batch_unknown")})
			continue
		}
		if why := w.batchable(r.Context(), req, by); why != "" {
			c.Skipped = append(c.Skipped, batchSkip{ID: req.ID, Why: why})
			continue
		}
		c.Rows = append(c.Rows, w.batchRow(req))
	}
	w.render(rw, r, http.StatusOK, "batchconfirm.html", &c)
}

func (w *web) batchVerb(d approvals.Decision) string {
	if d == approvals.AllowOnce {
		return w.loc.T("web.batch_allow")
	}
	return w.loc.T("web.batch_deny")
}

// batchDecide is POST /web/batch/decide: Confirm. Each request the form
// names is checked again and decided on its own (its own audit row, its
// own cards' edit), never one it does not name: a request that arrived
// after the page was read is not in the form.
func (w *web) batchDecide(rw http.ResponseWriter, r *http.Request) {
	d, ok := batchDecision(r.PostFormValue("decision"))
	ids := batchIDs(r)
	if !ok || len(ids) == 0 {
		w.redirect(rw, r, flash{Error: true, Text: w.loc.T("web.batch_none")})
		return
	}
	by := w.actor(r)
	var done, failed []string
	for _, id := range ids {
		req, err := w.s.svc.Get(r.Context(), id)
		if err == nil {
			if why := w.batchable(r.Context(), req, by); why != "" {
				err = errors.New(why)
			}
		}
		if err == nil {
			_, err = w.s.svc.DecideChoice(r.Context(), id, approvals.Choice{Decision: d}, by)
		}
		if err != nil {
			text, expected := cards.Refusal(err, w.loc)
			if !expected && !errors.Is(err, approvals.ErrNotFound) {
				text = err.Error()
			}
			failed = append(failed, cards.SafeIn(id, w.loc)+" ("+text+")")
			continue
		}
		done = append(done, id)
	}
	w.s.log.Info("batch decision", "user", by.Name, "decision", string(d), "decided", len(done), "refused", len(failed))
	text := w.loc.T("web.batch_done", w.batchVerb(d), len(done), strings.Join(done, ", "))
	if len(failed) > 0 {
		text += " " + w.loc.T("web.batch_failed", strings.Join(failed, "; "))
	}
	w.redirect(rw, r, flash{Error: len(done) == 0, Text: text})
}
