package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Adapter is one coding agent's hook protocol: how its event reads, which
// approval requests a tool call becomes, and how the gateway's verdict is
// written back so the agent obeys it. The server endpoint
// POST /v1/hooks/{Name} and the command `gateway hook {Name}` both use
// it; neither knows which agent it serves.
type Adapter struct {
	Name    string // the endpoint's and the command's name: "codex"
	Label   string // shown on cards: "Codex"
	Section string // its config table: "hooks.codex"
	// Decode reads one raw event; every error wraps ErrBadEvent.
	Decode func(raw []byte) (Event, error)
	// Map turns an event into the calls to ask about. Every one of them
	// must be allowed for the tool to run (a patch touching three files is
	// three fs:write requests). tools is the agent's tools map.
	Map func(ev Event, tools map[string]string) ([]Call, error)
	// Answer writes a verdict as the agent reads it.
	Answer func(ev Event, v Verdict) Reply
	// Relay, when set, is what the command sends the gateway instead of
	// the raw event (to leave out a file's content, say).
	Relay func(raw []byte) []byte
	// AskField is the field of an answer that can say "ask" ("" when the
	// adapter never answers ask), for NoAsk.
	AskField string
	// ConflictIs409: the endpoint answers a tool call id that named an
	// earlier, different call with 409 call_id_conflict (the deny in the
	// body), as POST /v1/requests does; otherwise with 200 and the deny.
	ConflictIs409 bool
	// Pair, when set, says which of two events that one tool call fires
	// (Copilot CLI's preToolUse then permissionRequest, Qwen Code's
	// PermissionRequest then PreToolUse) an event is: the gateway answers
	// a PairFollow from the PairLead's request for the same agent,
	// session, capability and target, never with a second card.
	Pair func(ev Event) PairRole
}

// PairRole is an event's place in a pair of events for one tool call.
type PairRole int

// The roles: an event of its own, the first of a pair (its requests are
// remembered), the second (answered from the first's requests).
const (
	PairNone PairRole = iota
	PairLead
	PairFollow
)

// RoleOf is ev's PairRole under a.
func (a Adapter) RoleOf(ev Event) PairRole {
	if a.Pair == nil || ev.SessionID == "" {
		return PairNone // without a session two events cannot be told to be one call
	}
	return a.Pair(ev)
}

// NoAsk turns an answer that says "ask" into one that denies, for an
// agent run with nobody at its prompt (a headless `gemini -p`, a script):
// there an ask would wait for ever. Other answers are returned unchanged.
func (a Adapter) NoAsk(body []byte) []byte {
	if a.AskField == "" {
		return body
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil || m[a.AskField] != Ask {
		return body
	}
	m[a.AskField] = Deny
	if r, ok := m["reason"].(string); ok {
		m["reason"] = r + " (no one can answer a prompt here: --no-ask)"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return b
}

// Verdict is the gateway's word on one tool call, before it is written in
// an agent's own format: Allow (run it), Deny (do not; Reason is for the
// model), or Ask (nobody decided: the agent's own prompt, or a block where
// the agent has no prompt to fall back on).
type Verdict struct {
	Decision string // Allow | Deny | Ask
	Reason   string
}

// VerdictOf is the verdict an Output (Decide, NoAnswer, Failed, Unmapped)
// carries.
func VerdictOf(o Output) Verdict {
	return Verdict{Decision: o.Decision(), Reason: o.Reason()}
}

// Combine is the verdict on a tool call that needed several requests:
// denied if any was, allowed only if all were, otherwise ask (with the
// first undecided one's reason).
func Combine(vs []Verdict) Verdict {
	if len(vs) == 0 {
		return Verdict{Ask, "approval gateway: nothing to ask about; asking here instead"}
	}
	var ask *Verdict
	reasons := make([]string, 0, len(vs))
	for i, v := range vs {
		switch v.Decision {
		case Deny:
			return v
		case Allow:
			reasons = append(reasons, v.Reason)
		default:
			if ask == nil {
				ask = &vs[i]
			}
		}
	}
	if ask != nil {
		return *ask
	}
	if len(vs) == 1 {
		return vs[0]
	}
	return Verdict{Allow, fmt.Sprintf("approval gateway: all %d requests allowed (%s)", len(vs), strings.Join(reasons, "; "))}
}

// asPermissionRequest says on the cards of cs that they come from an
// agent's permission request (label is the agent's: "Qwen Code").
func asPermissionRequest(cs []Call, label string) {
	for i := range cs {
		cs[i].Summary = label + " · permission request: " + strings.TrimPrefix(cs[i].Summary, label+" · ")
	}
}

// failClosed is v with an ask made a deny, for an agent (label) that
// runs a tool whose hook gives no verdict: there nobody is asked.
func failClosed(v Verdict, label string) Verdict {
	if v.Decision == Allow || v.Decision == Deny {
		return v
	}
	return Verdict{Deny, strings.TrimSuffix(v.Reason, "; asking here instead") + "; " + label +
		" runs a tool whose hook gives no verdict, so the call is blocked. Ask the user to approve it and try again."}
}

// Reply is what the agent reads: Body as one JSON line on stdout, and
// the command's exit status. The gateway's endpoint answers Body alone.
type Reply struct {
	Body any
	Exit int
}

// JSON is Body as one line.
func (r Reply) JSON() []byte {
	b, err := json.Marshal(r.Body)
	if err != nil {
		return []byte("{}")
	}
	return b
}

// Adapters are the agents `gateway hook NAME` and POST /v1/hooks/NAME
// serve.
func Adapters() []Adapter {
	return []Adapter{ClaudeCode, Codex, Gemini, Cursor, Copilot, Qwen, OpenCode}
}

// AdapterNamed finds an adapter by name.
func AdapterNamed(name string) (Adapter, bool) {
	for _, a := range Adapters() {
		if a.Name == name {
			return a, true
		}
	}
	return Adapter{}, false
}

// decodeEvent reads the common shape of agent hook events, of at most
// MaxEventBytes.
func decodeEvent(raw []byte, kind string) (Event, error) {
	var ev Event
	if len(raw) > MaxEventBytes {
		return ev, fmt.Errorf("%w: over %d bytes", ErrBadEvent, MaxEventBytes)
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, fmt.Errorf("%w: %s: %v", ErrBadEvent, kind, err)
	}
	return ev, nil
}

// calls finishes the calls of one event: executor, summary, a call_id per
// request. The call_id is the session's id and the tool call's (a model's
// call ids are unique only within a conversation), suffixed when one tool
// call asks several times; a retried hook finds the same requests.
func calls(ev Event, label, executor string, cs []Call) []Call {
	id := ev.ToolUseID
	if id != "" && ev.SessionID != "" {
		id = ev.SessionID + "/" + id
	}
	for i := range cs {
		cs[i].Executor = executor
		cs[i].Summary = summary(label, ev)
		cs[i].SessionID = ev.SessionID
		cs[i].CallID = id
		if id != "" && len(cs) > 1 {
			cs[i].CallID = fmt.Sprintf("%s#%d", id, i+1)
		}
		if cs[i].Intent == "" {
			cs[i].Intent = strings.TrimSpace(ev.ToolName + " " + cs[i].Target)
		}
	}
	return cs
}

// one maps a tool by table and tools map into a single call.
func one(ev Event, tools map[string]string, table map[string]func(*Call, Event) error, section string) ([]Call, error) {
	c, err := mapTool(ev, tools, table, section)
	if err != nil {
		return nil, err
	}
	return []Call{c}, nil
}

// each makes one call per path, all with the same capability.
func each(capability string, paths []string, cwd string, args func(p string) map[string]any) []Call {
	seen := map[string]bool{}
	var out []Call
	for _, p := range paths {
		t := resolve(cwd, p)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, Call{Capability: capability, Target: t, Args: args(p)})
	}
	return out
}
