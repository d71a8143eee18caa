package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/replay"
)

// webReplayShown is how many flipped requests the add form's replay names.
const webReplayShown = 5

// webReplay is the answer of POST /web/rules/simulate: the replay in the
// page's language, every agent string shown as cards show it.
type webReplay struct {
	Summary string   `json:"summary"`
	Lines   []string `json:"lines"`
	Error   bool     `json:"error,omitempty"`
}

// simulateRule is POST /web/rules/simulate: what the add form's rule would
// have done to the last week's requests (Simulate with that one rule added
// where the form puts it; read-only), shown live under the form before
// Add rule is pressed.
func (w *web) simulateRule(rw http.ResponseWriter, r *http.Request) {
	var pos json.RawMessage
	if p := r.PostFormValue("position"); p != "" {
		pos = json.RawMessage(strconv.Quote(p))
	}
	res, err := w.s.Simulate(r.Context(), replay.Body{Since: "7d", Against: "policy", AddRules: []replay.RuleBody{{
		Capability: r.PostFormValue("capability"), Target: strings.TrimSpace(r.PostFormValue("target")),
		Action: r.PostFormValue("action"), SenderID: strings.TrimSpace(r.PostFormValue("sender_id")),
		Agent: strings.TrimSpace(r.PostFormValue("agent")), Channel: strings.TrimSpace(r.PostFormValue("channel")),
		Position: pos,
	}}})
	var fe *policy.FieldError
	switch {
	case errors.As(err, &fe):
		// Not a rule yet (the form is being typed): say what is wrong.
		writeJSON(rw, http.StatusOK, webReplay{Error: true,
			Summary: w.loc.T("web.replay_invalid", cards.SafeIn(strings.TrimPrefix(fe.Error(), "add_rules[0]."), w.loc))})
		return
	case err != nil:
		w.s.log.Error("web rule replay", "err", err)
		writeJSON(rw, http.StatusInternalServerError, webReplay{Error: true, Summary: w.loc.T("web.replay_failed")})
		return
	}
	out := webReplay{Summary: w.loc.T("web.replay_summary", len(res.Changed), res.Total), Lines: []string{}}
	for _, c := range res.Changed[:min(len(res.Changed), webReplayShown)] {
		out.Lines = append(out.Lines, w.loc.T("web.replay_line", cards.SafeIn(c.Agent, w.loc), cards.SafeIn(c.Capability, w.loc),
			cards.SafeIn(c.Target, w.loc), c.Before, c.After))
	}
	if n := len(res.Changed) - webReplayShown; n > 0 {
		out.Lines = append(out.Lines, w.loc.T("web.replay_more", n))
	}
	writeJSON(rw, http.StatusOK, out)
}
