package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/cards"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/policy"
	"github.com/metnos/gateway/storage"
)

// webMaxHistory is how many audit rows the History view shows: the newest
// that match its filters.
const webMaxHistory = 200

// auditEvents are the event names the History view suggests for its event
// filter (any name can be typed: newer kinds of rows too).
var auditEvents = []string{storage.AuditOutcome, storage.AuditApproval, storage.AuditDecision, storage.AuditEscalated,
	storage.AuditNotified, storage.AuditExpired, storage.AuditCancelled,
	storage.AuditNote, storage.AuditGrantWritten, storage.AuditGrantRevoked, storage.AuditRateLimited,
	storage.AuditRuleAdded, storage.AuditRuleChanged, storage.AuditRuleRemoved, storage.AuditTokenCreated,
	storage.AuditTokenRevoked, storage.AuditPrune, storage.AuditGenesis, storage.AuditCheckpoint}

// historyFilter is the History view's form, as given.
type historyFilter struct {
	Agent, Capability, Event, Person, Since, Until string
}

// historyRow is one audit row as the History view shows it.
type historyRow struct {
	storage.AuditEvent
	Facts []cards.AuditFact
	// Passkey says, on a request's page, who signed the row with which
	// passkey and whether the signature verifies now ("" for a row with
	// none).
	Passkey string
	// PasskeyBad: the signature does not verify.
	PasskeyBad bool
}

// historyData is what history.html reads.
type historyData struct {
	F            historyFilter
	Capabilities []string
	Events       []string
	Error        string
	Rows         []historyRow
	Full         bool // as many rows as the view shows: there may be older ones
}

// requestData is what request.html reads: one request (nil when pruned)
// as its card with every field whole and, while pending, the decision
// buttons (the page cards link to when they cut a field), and its audit
// rows.
type requestData struct {
	ID      string
	Request *approvals.Request
	Card    pendingCard
	Reason  string
	Rows    []historyRow
	CSRF    string
	Flash   *flash
	User    string
}

func historyRows(rows []storage.AuditEvent, l locale.Locale) []historyRow {
	out := make([]historyRow, 0, len(rows))
	for _, e := range rows {
		e.Actor = cards.SafeIn(e.Actor, l) // the facts went through cards.Display in AuditFacts
		out = append(out, historyRow{AuditEvent: e, Facts: cards.AuditFacts(e, l)})
	}
	return out
}

// parseWebTime reads a History time: a date and time in the gateway's time
// zone ("2026-11-23 14:00", the browser's "2026-11-23T14:00", a day), or
// what the API takes (a duration back from now, RFC 3339).
func (w *web) parseWebTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, w.loc.Zone()); err == nil {
			return t, nil
		}
	}
	return storage.ParseAuditTime(s, w.s.now())
}

// history is GET /history: the audit trail, newest first, filtered by
// agent, capability, event, person and time range; each row links to its
// request.
func (w *web) history(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := historyData{
		F: historyFilter{Agent: q.Get("agent"), Capability: q.Get("capability"), Event: q.Get("event"),
			Person: q.Get("person"), Since: q.Get("since"), Until: q.Get("until")},
		Events: auditEvents,
	}
	for _, c := range policy.Registry() {
		d.Capabilities = append(d.Capabilities, c.Name)
	}
	f := storage.AuditFilter{Agent: d.F.Agent, Capability: d.F.Capability, Event: d.F.Event, Actor: d.F.Person,
		Limit: webMaxHistory, Newest: true}
	var err error
	if d.F.Since != "" {
		if f.Since, err = w.parseWebTime(d.F.Since); err != nil {
			d.Error = w.loc.T("web.h_bad_time", d.F.Since)
		}
	}
	if d.F.Until != "" && d.Error == "" {
		if f.Until, err = w.parseWebTime(d.F.Until); err != nil {
			d.Error = w.loc.T("web.h_bad_time", d.F.Until)
		}
	}
	if d.Error == "" {
		rows, err := w.s.svc.DB().QueryAudit(r.Context(), f)
		if err != nil {
			w.fail(rw, r, fmt.Errorf("web history: %w", err))
			return
		}
		slices.Reverse(rows) // newest first
		d.Rows, d.Full = historyRows(rows, w.loc), len(rows) == webMaxHistory
	}
	w.render(rw, r, http.StatusOK, "history.html", &d)
}

// request is GET /requests/{id} (and /r/{id}, the short form cards link
// to): one request with every field whole, hidden characters escaped, the
// same buttons as / while it is pending, and its audit trail, also after
// the request itself was pruned.
func (w *web) request(rw http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d := requestData{ID: id}
	req, err := w.s.svc.Get(r.Context(), id)
	switch {
	case err == nil:
		d.Request = &req
		d.Card, d.Reason = w.cardOf(r.Context(), req), cards.SafeIn(req.Reason, w.loc)
	case !errors.Is(err, approvals.ErrNotFound):
		w.fail(rw, r, fmt.Errorf("web request %s: %w", id, err))
		return
	}
	rows, err := w.s.svc.DB().QueryAudit(r.Context(), storage.AuditFilter{RequestID: id})
	if err != nil {
		w.fail(rw, r, fmt.Errorf("web request %s: %w", id, err))
		return
	}
	if d.Request == nil && len(rows) == 0 {
		w.refuse(rw, r, http.StatusNotFound, w.loc.T("web.h_no_request_title"), w.loc.T("web.h_no_request", id), linkHistory)
		return
	}
	d.Rows = historyRows(rows, w.loc)
	for i := range d.Rows {
		w.passkeyLine(r.Context(), &d.Rows[i])
	}
	d.CSRF, d.Flash, d.User = sessionOf(r).CSRF, w.takeFlash(rw, r), sessionOf(r).User
	w.render(rw, r, http.StatusOK, "request.html", &d)
}
