package cards

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/metnos/gateway/approvals"
	"github.com/metnos/gateway/locale"
	"github.com/metnos/gateway/storage"
)

// MaxAuditListed is how many audit rows a chat listing shows: the last 20.
const MaxAuditListed = 20

// auditDetailMax bounds one detail value in a chat listing.
const auditDetailMax = 60

// AuditFact is one part of an audit row as people read it.
type AuditFact struct{ Key, Value string }

// AuditFacts are the parts of an audit row worth showing after its event
// and actor: agent, capability, request, grant, then the rest of the
// detail by key (names and ids only; the trail holds no argument values).
// The four named parts are labelled in l's language; the detail keys are
// the trail's own field names.
func AuditFacts(e storage.AuditEvent, l locale.Locale) []AuditFact {
	var out []AuditFact
	add := func(k, v string) {
		if v != "" { // agent-supplied names and reasons: shown through Display
			v, _ = CutIn(oneLine(SafeIn(v, l)), auditDetailMax, l)
			out = append(out, AuditFact{k, v})
		}
	}
	add(l.T("audit.agent"), e.Agent)
	add(l.T("audit.capability"), e.Capability)
	add(l.T("audit.request"), e.RequestID)
	if e.GrantID != 0 {
		add(l.T("audit.grant"), fmt.Sprintf("#%d", e.GrantID))
	}
	keys := make([]string, 0, len(e.Detail))
	for k := range e.Detail {
		switch k {
		case "agent", "capability", "grant_id", "call_id":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := e.Detail[k].(string)
		if !ok {
			b, _ := json.Marshal(e.Detail[k])
			v = string(b)
		}
		add(k, v)
	}
	return out
}

// auditActor is who wrote an audit row, shown through Display.
func auditActor(a string, l locale.Locale) string {
	out, _ := CutIn(oneLine(SafeIn(a, l)), auditDetailMax, l)
	return out
}

// auditScope is what an audit listing is of, in l's language.
func auditScope(sc approvals.AuditScope, l locale.Locale) string {
	sc.Value = SafeIn(sc.Value, l)
	switch sc.Kind {
	case "all":
		return l.T("audit.scope_all")
	case "person":
		return "@" + sc.Value
	case "request":
		return l.T("audit.scope_request", sc.Value)
	case "agent":
		return l.T("audit.scope_agent", sc.Value)
	}
	return sc.Value
}

func auditFactsText(e storage.AuditEvent, l locale.Locale) string {
	var parts []string
	for _, f := range AuditFacts(e, l) {
		parts = append(parts, f.Key+" "+f.Value)
	}
	return strings.Join(parts, " · ")
}

// SlackAuditText is the answer to /approvals audit: the rows (oldest
// first) under a title saying what was asked, in mrkdwn, every dynamic
// string escaped, within one section.
func SlackAuditText(rows []storage.AuditEvent, scope approvals.AuditScope, l locale.Locale) string {
	what := EscapeMrkdwn(auditScope(scope, l))
	if len(rows) == 0 {
		return l.T("audit.none", what)
	}
	var b strings.Builder
	b.WriteString("*" + l.T("audit.title", len(rows), what) + "* " + l.T("audit.oldest_first"))
	for _, e := range rows {
		fmt.Fprintf(&b, "\n• `#%d` %s — *%s* %s %s", e.Seq, EscapeMrkdwn(l.Clock(e.At)), EscapeMrkdwn(e.Event),
			l.T("audit.by"), EscapeMrkdwn(auditActor(e.Actor, l)))
		if facts := auditFactsText(e, l); facts != "" {
			b.WriteString(" · " + EscapeMrkdwn(facts))
		}
	}
	return fitEscaped(b.String(), SlackMaxSectionText)
}

// TelegramAudit is the answer to /history: the rows (oldest first) under
// a title, HTML-escaped, within Telegram's message limit (the oldest rows
// give way first).
func TelegramAudit(rows []storage.AuditEvent, scope approvals.AuditScope, l locale.Locale) TelegramMessage {
	what := auditScope(scope, l)
	for {
		var t tgText
		if len(rows) == 0 {
			t.text(l.T("audit.none", what))
			return TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
		}
		t.tag("b", l.T("audit.title", len(rows), what))
		t.text(" " + l.T("audit.oldest_first"))
		for _, e := range rows {
			t.nl()
			t.text(fmt.Sprintf("#%d %s — ", e.Seq, l.Clock(e.At)))
			t.tag("b", e.Event)
			t.text(" " + l.T("audit.by") + " " + auditActor(e.Actor, l))
			if facts := auditFactsText(e, l); facts != "" {
				t.text(" · " + facts)
			}
		}
		m := TelegramMessage{HTML: t.html.String(), Plain: t.plain.String()}
		if UTF16Len(m.Plain) <= TelegramMaxText || len(rows) == 1 {
			return m
		}
		rows = rows[1:]
	}
}
