package hooks

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Output is what the hook prints (or the http hook answers): Claude Code
// reads hookSpecificOutput.permissionDecision. The reason of a deny is
// shown to Claude, so it can change course; the reason of an allow or an
// ask is shown to the person at the terminal.
type Output struct {
	HookSpecificOutput Specific `json:"hookSpecificOutput"`
}

// Specific is the PreToolUse part of Output.
type Specific struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// Answer builds an Output.
func Answer(decision, reason string) Output {
	return Output{Specific{HookEventName: EventName, PermissionDecision: decision, PermissionDecisionReason: reason}}
}

// Decision is the permission decision of o.
func (o Output) Decision() string { return o.HookSpecificOutput.PermissionDecision }

// Reason is the reason of o.
func (o Output) Reason() string { return o.HookSpecificOutput.PermissionDecisionReason }

// Result is the part of a gateway request object an answer is made from,
// so both the command (through the client) and the server (from its own
// request type) can use Decide.
type Result struct {
	ID        string
	Status    string // pending | allowed | denied | expired | cancelled
	Decision  string // allow_once | allow_always | allow_for | allow_session | deny | "" (policy decided)
	DecidedBy string
	Reason    string // what policy said
	BlockedBy string // guard | judge | policy | ""
	Note      string // the owner's note, if any
}

// Decide turns a gateway request into the hook's answer: allowed → allow,
// denied → deny with the reason for Claude, anything else (expired,
// cancelled, still pending) → ask, so the local prompt takes over. A
// finished request is never turned into a silent allow.
func Decide(r Result) Output {
	switch r.Status {
	case "allowed":
		return Answer(Allow, "approval gateway: "+allowedBy(r)+notePart(r))
	case "denied":
		return Answer(Deny, "approval gateway: "+deniedBy(r)+notePart(r)+
			". Do not retry the same call; ask the user or take another approach.")
	case "expired":
		return Answer(Ask, fmt.Sprintf("approval gateway: request %s expired with no answer; asking here instead", r.ID))
	case "cancelled":
		return Answer(Ask, fmt.Sprintf("approval gateway: request %s was withdrawn; asking here instead", r.ID))
	}
	return Answer(Ask, fmt.Sprintf("approval gateway: request %s is still pending; asking here instead", r.ID))
}

func allowedBy(r Result) string {
	switch {
	case r.DecidedBy == "":
	case r.Decision == "allow_always":
		return "allowed always by " + r.DecidedBy
	case r.Decision == "allow_for":
		return "allowed for a limited time by " + r.DecidedBy
	case r.Decision == "allow_session":
		return "allowed for this session by " + r.DecidedBy
	case r.Decision != "":
		return "allowed once by " + r.DecidedBy
	}
	return "allowed by policy (" + r.Reason + ")"
}

func deniedBy(r Result) string {
	switch {
	case r.Decision == "deny" && r.DecidedBy != "":
		return "denied by " + r.DecidedBy
	case r.BlockedBy != "":
		return "denied by the " + r.BlockedBy + ": " + TrimLayer(r.Reason, r.BlockedBy)
	}
	return "denied: " + r.Reason
}

// TrimLayer drops the layer names policy puts before a blocking reason
// ("vaglio guard: guard: forbidden path …" → "forbidden path …") so the
// reason reads once after "denied by the guard:".
func TrimLayer(reason, layer string) string {
	for _, p := range []string{"vaglio " + layer + ": ", layer + ": "} {
		reason = strings.TrimPrefix(reason, p)
	}
	return reason
}

func notePart(r Result) string {
	if r.Note == "" {
		return ""
	}
	return ". Note from the owner: " + r.Note
}

// NoAnswer is the answer when nobody decided within wait: the request was
// withdrawn (when withdrawn is true) and the local prompt takes over.
func NoAnswer(id string, wait time.Duration, withdrawn bool) Output {
	w := ""
	if withdrawn {
		w = ", withdrawn"
	}
	return Answer(Ask, fmt.Sprintf("approval gateway: no answer within %s (request %s%s); asking here instead", wait, id, w))
}

// Failed is the answer when the gateway could not be asked (unreachable,
// bad token, a bad event, a bad config): ask, never allow.
func Failed(err error) Output {
	return Answer(Ask, notConsulted+oneLine(err.Error())+"; asking here instead")
}

const notConsulted = "approval gateway not consulted: "

// NotConsulted reports whether o is a Failed answer: the gateway could
// not ask anyone (as opposed to asking and getting no answer).
func (o Output) NotConsulted() bool {
	return o.Decision() == Ask && strings.HasPrefix(o.Reason(), notConsulted)
}

// Unmapped is the answer for an event Map refused: unknownTool ("ask" or
// "deny", [hooks.claude_code] unknown_tool) for a tool without a mapping,
// ask for anything else.
func Unmapped(err error, unknownTool string) Output {
	var ut *UnknownToolError
	if errors.As(err, &ut) {
		if unknownTool == Deny {
			return Answer(Deny, "approval gateway: "+ut.Error()+"; unknown tools are denied by its config")
		}
		return Answer(Ask, "approval gateway: "+ut.Error()+"; asking here instead")
	}
	return Failed(err)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
