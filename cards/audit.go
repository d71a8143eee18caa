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
			v, _ = CutIn(OneLine(SafeIn(v, l)), auditDetailMax, l)
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

// AuditActor is who wrote an audit row, shown through Display.
func AuditActor(a string, l locale.Locale) string {
	out, _ := CutIn(OneLine(SafeIn(a, l)), auditDetailMax, l)
	return out
}

// AuditWhat is what an audit listing is of, in l's language.
func AuditWhat(sc approvals.AuditScope, l locale.Locale) string {
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

// AuditFactsText is an audit row's facts on one line ("key value · key value").
func AuditFactsText(e storage.AuditEvent, l locale.Locale) string {
	var parts []string
	for _, f := range AuditFacts(e, l) {
		parts = append(parts, f.Key+" "+f.Value)
	}
	return strings.Join(parts, " · ")
}
